/**
 * A browser-less dashboard client for HTTP-level tests: keeps cookies like a browser would
 * (per name, Path=/dashboard) and reads the CSRF token out of the forms it was served.
 */
export interface DashboardResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The `_csrf` value of the first form on the page, if any. */
  csrf: string | undefined;
}

export class DashboardClient {
  readonly cookies = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  async get(path: string, headers: Record<string, string> = {}): Promise<DashboardResponse> {
    return this.send('GET', path, undefined, headers);
  }

  async post(
    path: string,
    fields: Record<string, string>,
    headers: Record<string, string> = {},
  ): Promise<DashboardResponse> {
    return this.send('POST', path, new URLSearchParams(fields).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      ...headers,
    });
  }

  /** Signs in with the password form, as a person would: load the form, post it with its token. */
  async signIn(password: string, headers: Record<string, string> = {}): Promise<DashboardResponse> {
    const form = await this.get('/dashboard/login', headers);
    return this.post('/dashboard/login', { _csrf: form.csrf ?? '', password }, headers);
  }

  private async send(
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
  ): Promise<DashboardResponse> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(this.baseUrl + path, {
      method,
      body,
      redirect: 'manual',
      headers: { ...(cookie ? { cookie } : {}), ...headers },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, csrf: /name="_csrf" value="([^"]+)"/.exec(text)?.[1] };
  }
}

/** The Set-Cookie line of one cookie, for checking its attributes. */
export const setCookieLine = (headers: Headers, name: string): string | undefined =>
  headers.getSetCookie().find((line) => line.startsWith(`${name}=`));
