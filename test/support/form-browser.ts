/** An answer as a browser gets it: status, body, headers; `location` when it redirects elsewhere. */
export interface BrowserPage {
  status: number;
  html: string;
  headers: Headers;
  /** Set when the page redirected away from the service (an OAuth client's redirect URI). */
  location?: string;
}

/**
 * A browser as the service's form posts see one (the MCP consent page's decision): a cookie jar, `Origin` and `Sec-Fetch-Site` on
 * posts, form encoding, and redirects followed by hand (each answer's `Set-Cookie` reaches the
 * jar); a redirect to another origin is not followed but returned as `location`.
 */
export class FormBrowser {
  private readonly jar = new Map<string, string>();
  private readonly origin: string;

  constructor(private readonly base: string) {
    this.origin = new URL(base).origin;
  }

  /** The jar as a `Cookie` header value (null when empty). */
  cookie(): string | null {
    return this.jar.size === 0 ? null : [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  get signedIn(): boolean {
    return this.jar.has('svc_session');
  }

  private remember(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const [name, value] = [pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1)];
      if (value === '' || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  private cookieHeader(): Record<string, string> {
    return this.jar.size === 0 ? {} : { Cookie: [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ') };
  }

  private async follow(res: Response): Promise<BrowserPage> {
    this.remember(res.headers);
    if (res.status >= 300 && res.status < 400) {
      const target = new URL(res.headers.get('location')!, this.base);
      if (target.origin !== this.origin) return { status: res.status, html: await res.text(), headers: res.headers, location: target.href };
      return this.get(target.href);
    }
    return { status: res.status, html: await res.text(), headers: res.headers };
  }

  /** GETs a path of the service, or a whole URL. */
  async get(pathOrUrl: string): Promise<BrowserPage> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : `${this.base}${pathOrUrl}`;
    return this.follow(await fetch(url, { headers: { Accept: 'text/html', ...this.cookieHeader() }, redirect: 'manual' }));
  }

  /** Signs in as the studio does (`POST /auth/sign-in`, JSON, same-origin); the cookie reaches the jar. */
  async signIn(email: string, password: string): Promise<void> {
    const res = await fetch(`${this.base}/auth/sign-in`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: this.origin, 'Sec-Fetch-Site': 'same-origin' },
      body: JSON.stringify({ email, password }),
    });
    if (res.status !== 200) throw new Error(`sign-in answered ${res.status}: ${await res.text()}`);
    this.remember(res.headers);
  }

  /** Posts a form to a path of the service; redirects are followed as a browser does. */
  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<BrowserPage> {
    const res = await fetch(`${this.base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: this.origin, 'Sec-Fetch-Site': 'same-origin', ...this.cookieHeader(), ...headers },
      body: new URLSearchParams(fields).toString(),
      redirect: 'manual',
    });
    return this.follow(res);
  }
}

