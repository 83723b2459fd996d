// libmime ships no types; mailsvc uses one function of it (a CommonJS singleton).
declare module 'libmime' {
  const libmime: {
    /** Decodes RFC 2047 encoded-words (`=?UTF-8?Q?…?=`) in a header value. */
    decodeWords(value: string): string;
  };
  export default libmime;
}
