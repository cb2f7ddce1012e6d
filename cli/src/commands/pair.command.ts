import { Command, CommandRunner, Option } from 'nest-commander';
import { renderUnicodeCompact } from 'uqr';

import { codeFactoryHome, locateWorkspace } from '@server/core/workspace/workspace';

import { UsageError } from '../options';
import { OwnerApi } from '../owner/owner-api';

interface PairFlags {
  workspace?: string;
  name?: string;
}

@Command({
  description: 'Pair a phone (or any browser): prints a one-time link and its QR code, valid 10 minutes',
  name: 'pair',
})
export class PairCommand extends CommandRunner {
  async run(_params: string[], flags: PairFlags): Promise<void> {
    let paths;
    try {
      paths = locateWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const api = new OwnerApi(paths);
    let pairing;
    try {
      pairing = await api.call('pair', (client, signal) =>
        client.POST('/api/devices/pairings', { body: { name: flags.name }, signal }),
      );
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const until = new Date(pairing.expiresAt).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    process.stdout.write(`Pair "${pairing.name}" with Agent Manager on ${paths.root}\n\n`);
    // The code's light modules are drawn as blocks in the text's colour: right on a dark terminal, as most are.
    process.stdout.write(`${renderUnicodeCompact(pairing.url, { border: 2 })}\n\n`);
    process.stdout.write(`Scan it, or open this one-time link on the phone (valid until ${until}):\n${pairing.url}\n`);
    if (pairing.reachability === 'loopback_only') {
      process.stdout.write(
        '\nNote: this manager answers on loopback only: the phone reaches the link through an SSH tunnel to this port\n' +
          '(ssh -N -L <port>:127.0.0.1:<port> you@this-machine), or start it with --host and --tls-cert/--tls-key (README: On your phone).\n',
      );
    }
    process.stdout.write('\nPaired devices are listed, and revoked, in Settings → Devices.\n');
  }

  @Option({ description: 'What to call the device (default: Phone)', flags: '--name <name>' })
  parseName(value: string): string {
    return value;
  }

  @Option({
    description: 'Repository whose manager pairs it (default: the current directory)',
    flags: '-w, --workspace <dir>',
  })
  parseWorkspace(value: string): string {
    return value;
  }
}
