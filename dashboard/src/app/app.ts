import { ChangeDetectionStrategy, Component, OnInit, computed, signal } from '@angular/core';

/** Shape of GET /api/health. */
interface Health {
  ok: boolean;
  version: string;
  workspaceRoot: string;
}

type HealthState =
  | { status: 'loading' }
  | { status: 'ok'; health: Health }
  | { status: 'unreachable' };

function isHealth(value: unknown): value is Health {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['ok'] === 'boolean' &&
    typeof v['version'] === 'string' &&
    typeof v['workspaceRoot'] === 'string'
  );
}

@Component({
  selector: 'am-root',
  templateUrl: './app.html',
  styleUrl: './app.css',
  changeDetection: ChangeDetectionStrategy.OnPush,
})
export class App implements OnInit {
  protected readonly title = 'Agent Manager';
  protected readonly description = 'A local control plane for agent-driven software delivery';
  protected readonly state = signal<HealthState>({ status: 'loading' });
  protected readonly health = computed(() => {
    const s = this.state();
    return s.status === 'ok' ? s.health : null;
  });

  ngOnInit(): void {
    void this.loadHealth();
  }

  private async loadHealth(): Promise<void> {
    try {
      const res = await fetch('/api/health', { headers: { Accept: 'application/json' } });
      const body: unknown = res.ok ? await res.json() : null;
      this.state.set(isHealth(body) ? { status: 'ok', health: body } : { status: 'unreachable' });
    } catch {
      this.state.set({ status: 'unreachable' });
    }
  }
}
