import { signWebhookBody, verifyWebhookSignature, webhookSignatureVerifier } from './webhook-signature';

describe(verifyWebhookSignature.name, () => {
  const secret = "It's a Secret to Everybody";
  const body = Buffer.from('Hello, World!');

  it('accepts GitHub’s documented example and a signature of the exact bytes', () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const documented = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(signWebhookBody(secret, body)).toBe(documented);
    expect(verifyWebhookSignature(secret, body, documented)).toBe(true);
    expect(
      verifyWebhookSignature(secret, body.toString(), documented.toUpperCase().replace('SHA256=', 'sha256=')),
    ).toBe(true);
  });

  it.each([
    ['another secret', () => signWebhookBody('other', body)],
    ['a tampered body', () => signWebhookBody(secret, 'Hello, World?')],
    ['no prefix', () => signWebhookBody(secret, body).slice('sha256='.length)],
    ['sha1', () => signWebhookBody(secret, body).replace('sha256=', 'sha1=')],
    ['a short digest', () => signWebhookBody(secret, body).slice(0, -2)],
    ['a long digest', () => `${signWebhookBody(secret, body)}00`],
    ['non-hex', () => `sha256=${'z'.repeat(64)}`],
    ['empty', () => ''],
    ['missing', () => undefined],
    ['repeated headers', () => [signWebhookBody(secret, body), signWebhookBody(secret, body)]],
  ])('rejects %s', (_, header) => {
    expect(verifyWebhookSignature(secret, body, header())).toBe(false);
  });

  it('rejects everything when no secret is configured', () => {
    expect(verifyWebhookSignature('', body, signWebhookBody('', body))).toBe(false);
  });
});

describe(webhookSignatureVerifier.name, () => {
  const secret = "It's a Secret to Everybody";

  it('verifies a body fed in chunks as it streams in', () => {
    const body = Buffer.from('{"zen":"Keep it logically awesome."}'.repeat(1000));
    const verifier = webhookSignatureVerifier(secret, signWebhookBody(secret, body));
    for (let at = 0; at < body.length; at += 997) {
      verifier!.update(body.subarray(at, at + 997));
    }
    expect(verifier!.matches()).toBe(true);
    const tampered = webhookSignatureVerifier(secret, signWebhookBody(secret, body));
    tampered!.update(body.subarray(1));
    expect(tampered!.matches()).toBe(false);
  });

  it('is null for a header that cannot be a signature, so no body is read for it', () => {
    for (const header of [undefined, '', 'sha1=abc', `sha256=${'z'.repeat(64)}`, ['a', 'b']]) {
      expect(webhookSignatureVerifier(secret, header)).toBeNull();
    }
    expect(webhookSignatureVerifier('', `sha256=${'0'.repeat(64)}`)).toBeNull();
  });
});
