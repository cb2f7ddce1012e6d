import * as fs from 'node:fs';
import * as path from 'node:path';

import { DROPPED_CAPABILITIES, PASSED_DEVICES, SHARED_TEMPORARY, SandboxLayout } from './sandbox-layout';

// A layout turned into the mechanism's own terms: bubblewrap's options on Linux, a Seatbelt
// profile on macOS. Pure functions, unit-tested on their output.

function inside(file: string, dir: string): boolean {
  const relative = path.relative(dir, file);
  return relative === '' || (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative));
}

function exists(file: string): boolean {
  return fs.existsSync(file);
}

/** The host's devices a sandbox gets besides the basic ones: those of PASSED_DEVICES this machine has. */
export function passedDevices(): string[] {
  let names: string[] = [];
  try {
    names = fs.readdirSync('/dev');
  } catch {
    return [];
  }
  const found = PASSED_DEVICES.filter((device) => exists(device));
  // GPUs by their family's prefix (nvidia0, nvidiactl, nvidia-uvm…).
  found.push(...names.filter((name) => name.startsWith('nvidia')).map((name) => path.join('/dev', name)));
  return found;
}

/**
 * bubblewrap's options for a layout (what goes before `--` and the command). A new PID namespace
 * with its own /proc is part of the hiding: through the host's /proc an agent could walk into any
 * of the user's processes' mount namespaces (`/proc/<pid>/root/…`), open files (`fd/`) or
 * environments (`environ`: another run's credential). The manager still sees every process of
 * the run (its namespace is the parent one), so the marker-based tree kill works unchanged.
 * Paths that do not exist are left out (bwrap would fail on them, or create mount points on the
 * real file system).
 */
export function bubblewrapOptions(layout: SandboxLayout): string[] {
  // A /dev of its own (the basic devices, a private pseudo-terminal instance): the host's would let
  // it open the person's terminals (/dev/pts/N) and read what they type. The devices builds and
  // tests use (virtualisation, GPUs, FUSE, tun) are bound back where the machine has them.
  const args = ['--ro-bind', '/', '/', '--dev', '/dev'];
  for (const device of passedDevices()) {
    args.push('--dev-bind', device, device);
  }
  const temporary = layout.temporary;
  if (temporary !== null && exists('/dev/shm')) {
    args.push('--size', String(temporary.shmBytes), '--tmpfs', '/dev/shm');
  }
  args.push('--unshare-pid', '--proc', '/proc');
  if (layout.network !== undefined && layout.network.kind !== 'host') {
    // Loopback alone (bubblewrap brings it up): no interface, no route, no DNS server.
    args.push('--unshare-net');
  }
  for (const cap of DROPPED_CAPABILITIES) {
    args.push('--cap-drop', cap);
  }
  for (const dir of SHARED_TEMPORARY.filter(exists)) {
    // The run's own, sized and gone with it; or the shared ones (what the paths below bind into).
    args.push(...(temporary !== null ? ['--size', String(temporary.tmpBytes), '--tmpfs', dir] : ['--bind', dir, dir]));
  }
  for (const dir of unique(layout.protectedRoots).filter(exists)) {
    args.push('--ro-bind', dir, dir);
  }
  for (const dir of unique(layout.writable).filter(exists)) {
    args.push('--bind', dir, dir);
  }
  for (const file of unique(layout.readOnly).filter(exists)) {
    args.push('--ro-bind', file, file);
  }
  const emptied = unique([...layout.hidden, ...layout.concealed]).filter(exists);
  for (const dir of emptied) {
    args.push('--tmpfs', dir);
  }
  const within = (file: string) => emptied.some((dir) => inside(file, dir));
  for (const dir of unique([
    ...layout.writable,
    ...(layout.writable.some((w) => inside(layout.cwd, w)) ? [] : [layout.cwd]),
  ]).filter(exists)) {
    if (within(dir)) {
      args.push('--bind', dir, dir);
    }
  }
  for (const file of unique(layout.readOnly).filter(exists)) {
    // Protected files inside a tree just bound back (a worktree's `.git` link).
    if (within(file)) {
      args.push('--ro-bind', file, file);
    }
  }
  for (const file of unique(layout.readOnlyFiles).filter(exists)) {
    // Outside the hidden trees a file is visible anyway.
    if (layout.hidden.some((dir) => inside(file, dir))) {
      args.push('--ro-bind', file, file);
    }
  }
  if (layout.network?.kind === 'proxy' && layout.network.socketPath !== null) {
    // The proxy's socket lies in the concealed tree of runs' temporary directories: its own bound back.
    const socketDir = path.dirname(layout.network.socketPath);
    args.push('--bind', socketDir, socketDir);
  }
  for (const file of unique(layout.unreadable ?? []).filter(exists)) {
    args.push('--ro-bind', '/dev/null', file);
  }
  if (temporary?.tmpLink) {
    // $TMPDIR is the run's own /tmp: one size for both.
    args.push('--symlink', '/tmp', temporary.tmpLink);
  }
  args.push('--chdir', layout.cwd);
  return args;
}

/**
 * The same rules as a macOS Seatbelt profile (`sandbox-exec -p`): writes denied outside the
 * writable trees, the read-only ones denied again inside them, the hidden and concealed trees
 * neither readable nor writable, own attachments and the work tree readable again. Later rules
 * win over earlier ones in Seatbelt as layers do in bubblewrap.
 */
export function seatbeltProfile(layout: SandboxLayout): string {
  const quote = (p: string) => `"${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const subpaths = (list: string[]) => unique(list).map((p) => `(subpath ${quote(p)})`);
  const literals = (list: string[]) => unique(list).map((p) => `(literal ${quote(p)})`);
  const lines = ['(version 1)', '(allow default)', '(deny file-write*)'];
  const writable = subpaths([
    ...SHARED_TEMPORARY,
    '/private/tmp',
    '/private/var/folders',
    '/dev',
    ...layout.writable,
    layout.cwd,
  ]);
  lines.push(`(allow file-write* ${writable.join(' ')})`);
  if (layout.readOnly.length > 0 || layout.protectedRoots.length > 0) {
    const rewritable = new Set([...layout.writable, layout.cwd]);
    const roots = layout.protectedRoots.filter((root) => ![...rewritable].some((w) => inside(w, root)));
    lines.push(
      `(deny file-write* ${[...subpaths(roots), ...subpaths(layout.readOnly)].join(' ')})`.replace(/ \)$/, ')'),
    );
  }
  const emptied = [...layout.hidden, ...layout.concealed];
  if (emptied.length > 0) {
    lines.push(`(deny file-read* file-write* ${subpaths(emptied).join(' ')})`);
    const back = unique([...layout.writable, layout.cwd]).filter((w) => emptied.some((dir) => inside(w, dir)));
    if (back.length > 0) {
      lines.push(`(allow file-read* file-write* ${subpaths(back).join(' ')})`);
      const again = layout.readOnly.filter((file) => back.some((dir) => inside(file, dir)));
      if (again.length > 0) {
        lines.push(`(deny file-write* ${subpaths(again).join(' ')})`);
      }
    }
    const files = layout.readOnlyFiles.filter((file) => layout.hidden.some((dir) => inside(file, dir)));
    if (files.length > 0) {
      lines.push(`(allow file-read* ${literals(files).join(' ')})`);
    }
  }
  if ((layout.unreadable ?? []).length > 0) {
    lines.push(`(deny file-read* file-write* ${literals(layout.unreadable ?? []).join(' ')})`);
  }
  const network = layout.network;
  if (network !== undefined && network.kind !== 'host') {
    // No namespaces here: every outbound connection is denied but to the run's proxy on loopback
    // and the ports it forwards (Agent Manager, a loopback model server), which it may dial directly.
    lines.push('(deny network-outbound)');
    const ports = network.kind === 'proxy' ? [network.proxyPort, ...network.forwardPorts] : [];
    for (const port of [...new Set(ports)]) {
      lines.push(`(allow network-outbound (remote ip "localhost:${port}"))`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function unique(list: string[]): string[] {
  return [...new Set(list)];
}
