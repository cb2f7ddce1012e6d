import { signWebhookBody, verifyWebhookSignature } from './webhook-signature';

describe(verifyWebhookSignature.name, () => {
  const secret = "It's a Secret to Everybody";
  const body = Buffer.from('Hello, World!');

  it('accepts GitHub’s documented example and a signature of the exact bytes', () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const documented = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(signWebhookBody(secret, body)).toBe(documented);
    expect(verifyWebhookSignature(secret, body, documented)).toBe(true);
    expect(verifyWebhookSignature(secret, body.toString(), documented.toUpperCase().replace('SHA256=', 'sha256='))).toBe(true);
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
