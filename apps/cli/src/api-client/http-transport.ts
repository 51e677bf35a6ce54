/** What sends a request: the global fetch's shape (tests hand in their own). */
export type FetchLike = typeof fetch;

/** The proxy variables, each read lower-case first as curl, undici and most tools do. */
export interface ProxySettings {
  httpProxy: string;
  httpsProxy: string;
  noProxy: string;
}

/** HTTP_PROXY, HTTPS_PROXY and NO_PROXY from `env`, lower-case spellings first; '' when unset. */
export function proxySettings(env: NodeJS.ProcessEnv): ProxySettings {
  const read = (name: string) => env[name.toLowerCase()] ?? env[name] ?? '';
  return { httpProxy: read('HTTP_PROXY'), httpsProxy: read('HTTPS_PROXY'), noProxy: read('NO_PROXY') };
}

/**
 * The one way prospect sends HTTP: undici's fetch with one EnvHttpProxyAgent as its dispatcher,
 * so every request honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY as teams set them (Node 20's own
 * fetch ignores them). Proxies are tunnelled with CONNECT by undici; no CONNECT is written here.
 *
 * The settings come from `env` alone (passed explicitly, so the process's variables never leak
 * into a run given another environment). undici is loaded at the first request, not at start:
 * commands that ask the server nothing (`auth:whoami`, `--version`) do not pay for it.
 * Certificates are node:tls's, so NODE_EXTRA_CA_CERTS (read by Node at process start) applies.
 */
export function httpTransport(env: NodeJS.ProcessEnv): FetchLike {
  let dispatcher: Promise<{ fetch: typeof import('undici').fetch; agent: import('undici').Dispatcher }> | undefined;
  const transport = async (input: Parameters<FetchLike>[0], init?: Parameters<FetchLike>[1]): Promise<Response> => {
    dispatcher ??= import('undici').then((loaded) => {
      // The built CLI loads undici as a CommonJS bundle of its own (build.mjs), whose exports are its default.
      const { EnvHttpProxyAgent, fetch } = typeof loaded.EnvHttpProxyAgent === 'function' ? loaded : (loaded as unknown as { default: typeof loaded }).default;
      return { fetch, agent: new EnvHttpProxyAgent(proxySettings(env)) };
    });
    const { fetch, agent } = await dispatcher;
    // undici's Response is the WHATWG one Node's fetch answers with, under its own type declarations.
    return (await fetch(input as never, { ...(init as object), dispatcher: agent })) as unknown as Response;
  };
  return transport as FetchLike;
}
