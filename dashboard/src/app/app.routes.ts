import { Routes } from '@angular/router';

/** Placeholder: the real dashboard routes are added in a later issue. */
export const routes: Routes = [];
