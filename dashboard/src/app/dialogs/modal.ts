import { Directive, ElementRef, afterNextRender, inject, output } from '@angular/core';

/**
 * Opens the host <dialog> as a modal once it is rendered: the browser then traps focus, closes it
 * on Escape and restores focus to the button that opened it. `amClosed` fires on every close.
 */
@Directive({ selector: 'dialog[amModal]', host: { '(close)': 'amClosed.emit()' } })
export class Modal {
  readonly amClosed = output<void>();
  private readonly host = inject<ElementRef<HTMLDialogElement>>(ElementRef);

  constructor() {
    afterNextRender(() => this.host.nativeElement.showModal());
  }

  close(): void {
    this.host.nativeElement.close();
  }
}
