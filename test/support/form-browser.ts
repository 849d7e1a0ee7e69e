/** An answer as a browser gets it: status, body, headers; `location` when it redirects elsewhere. */
export interface BrowserPage {
  status: number;
  html: string;
  headers: Headers;
  /** Set when the page redirected away from the service (an OAuth client's redirect URI). */
  location?: string;
}

/**
 * A browser as server-rendered pages see one: a cookie jar, `Origin` and `Sec-Fetch-Site` on
 * posts, form encoding, and redirects followed by hand (each answer's `Set-Cookie` reaches the
 * jar); a redirect to another origin is not followed but returned as `location`.
 */
export class FormBrowser {
  private readonly jar = new Map<string, string>();
  private readonly origin: string;

  constructor(private readonly base: string) {
    this.origin = new URL(base).origin;
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

/** The hidden and visible input values of the first form in a page, by name. */
export function formFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) {
    fields[match[1]!] = match[2]!.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  }
  return fields;
}
