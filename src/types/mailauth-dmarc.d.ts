// mailauth ships no types for its DMARC record look-up; mailsvc uses it to read a domain's policy.
declare module 'mailauth/lib/dmarc/get-dmarc-record.js' {
  /** The effective DMARC record of a domain (its own, else its organizational domain's), tags lower-cased; false when none. */
  function getDmarcRecord(
    domain: string,
    resolver: (name: string, type: string) => Promise<unknown>,
  ): Promise<false | ({ rr: string; isOrgRecord: boolean } & Record<string, string | number | boolean | undefined>)>;
  export default getDmarcRecord;
}

declare module 'mailauth/lib/tools.js' {
  /** The entry of `domains` that aligns with `fromDomain` (strict: the same name; relaxed: the same organizational domain), or false. */
  export function getAlignment(fromDomain: string, domains: string[], strict?: boolean): { domain: string } | false;
}
