import { Routes } from '@angular/router';

import { RequirementsBoard } from './boards/requirements-board';

// The Requirements board is the landing page and ships in the initial bundle; everything else is
// loaded on first visit (the detail view carries the Markdown renderer).
export const routes: Routes = [
  { path: '', pathMatch: 'full', redirectTo: 'requirements' },
  { path: 'requirements', component: RequirementsBoard, title: 'Requirements · Agent Manager' },
  {
    path: 'requirements/:id',
    loadComponent: () => import('./detail/requirement-detail').then((m) => m.RequirementDetail),
    title: 'Requirement · Agent Manager',
  },
  {
    path: 'requirements/:id/review',
    loadComponent: () => import('./review/review-view').then((m) => m.ReviewView),
    title: 'Review · Agent Manager',
  },
  {
    path: 'pull-requests',
    loadComponent: () => import('./boards/pull-requests-board').then((m) => m.PullRequestsBoard),
    title: 'Pull requests · Agent Manager',
  },
  {
    path: 'sessions',
    loadComponent: () => import('./boards/sessions-board').then((m) => m.SessionsBoard),
    title: 'Sessions · Agent Manager',
  },
  {
    path: 'attention',
    loadComponent: () => import('./boards/attention-list').then((m) => m.AttentionList),
    title: 'Needs you · Agent Manager',
  },
  {
    path: 'timers',
    loadComponent: () => import('./boards/timers-board').then((m) => m.TimersBoard),
    title: 'Timers · Agent Manager',
  },
  { path: '**', redirectTo: 'requirements' },
];
