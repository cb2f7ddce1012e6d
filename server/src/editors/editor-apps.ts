import type { EditorApp } from '@libs/contracts';

/**
 * The apps a working copy can be opened in, and the commands that open one with a folder, by
 * platform, most usual first. macOS apps are rarely on PATH: `open -a <App>` reaches them where
 * the bundle is installed.
 */
export const EDITOR_APPS: ReadonlyArray<{
  app: EditorApp;
  label: string;
  linux: readonly string[];
  darwin: readonly string[];
  /** The macOS bundle `open -a` launches when no command is on PATH. */
  bundle: string | null;
}> = [
  { app: 'vscode', bundle: 'Visual Studio Code', darwin: ['code'], label: 'VS Code', linux: ['code', 'codium'] },
  { app: 'cursor', bundle: 'Cursor', darwin: ['cursor'], label: 'Cursor', linux: ['cursor'] },
  { app: 'zed', bundle: 'Zed', darwin: ['zed'], label: 'Zed', linux: ['zed', 'zeditor'] },
  { app: 'idea', bundle: 'IntelliJ IDEA', darwin: ['idea'], label: 'IntelliJ IDEA', linux: ['idea', 'idea.sh'] },
  { app: 'file_manager', bundle: null, darwin: ['open'], label: 'File manager', linux: ['xdg-open'] },
];
