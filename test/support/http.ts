/** Raw HTTP for requests the typed client cannot express (bad JSON, wrong types, odd headers). */
export async function send(
  origin: string,
  method: string,
  path: string,
  body?: string | Buffer | object,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: any; text: string }> {
  const isRaw = typeof body === 'string' || Buffer.isBuffer(body);
  const response = await fetch(`${origin}${path}`, {
    body: body === undefined ? undefined : isRaw ? (body as string) : JSON.stringify(body),
    headers: { ...(body !== undefined && !isRaw ? { 'Content-Type': 'application/json' } : {}), ...headers },
    method,
  });
  const text = await response.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { headers: response.headers, json, status: response.status, text };
}
