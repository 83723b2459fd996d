// mjml 5 ships no type declarations; this is the part of its API the studio uses.
declare module 'mjml' {
  interface MjmlValidationError {
    line: number;
    message: string;
    tagName: string;
    formattedMessage: string;
  }
  interface MjmlOptions {
    validationLevel?: 'strict' | 'soft' | 'skip';
    filePath?: string;
    ignoreIncludes?: boolean;
    keepComments?: boolean;
    minify?: boolean;
  }
  function mjml2html(input: string, options?: MjmlOptions): Promise<{ html: string; errors: MjmlValidationError[] }>;
  export default mjml2html;
}
