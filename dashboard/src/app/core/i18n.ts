import { Injectable, computed, signal } from '@angular/core';

// Two dictionaries switched at run time (a signal), rather than Angular's build-time i18n, which
// would need one build per language and a reload to switch.

const en = {
  'app.title': 'Agent Manager',
  'nav.requirements': 'Requirements',
  'nav.pullRequests': 'Pull requests',
  'nav.sessions': 'Sessions',
  'nav.timers': 'Timers',
  'nav.main': 'Boards',
  'conn.live': 'Live',
  'conn.connecting': 'Connecting…',
  'conn.offline': 'Offline — retrying',
  'action.new': 'New requirement',
  'action.settings': 'Settings',
  'action.theme': 'Theme',
  'action.language': 'Language',
  'theme.system': 'System',
  'theme.light': 'Light',
  'theme.dark': 'Dark',
  'filter.text': 'Filter',
  'filter.created': 'Created',
  'filter.24h': 'Last 24 h',
  'filter.7d': 'Last 7 days',
  'filter.30d': 'Last 30 days',
  'filter.90d': 'Last 90 days',
  'filter.all': 'All time',
  'board.empty': 'Nothing here',
  'board.loading': 'Loading…',
  'board.more': 'Show {n} more',
  'req.todo': 'TODO',
  'req.doing': 'DOING',
  'req.waiting_confirmation': 'Waiting for confirmation',
  'req.done': 'DONE',
  'req.cancelled': 'Cancelled',
  'pr.draft': 'Draft',
  'pr.open': 'Open',
  'pr.closed': 'Closed',
  'pr.merged': 'Merged',
  'ses.idle': 'Idle',
  'ses.running': 'Running',
  'ses.waiting_human': 'Waiting for human',
  'ses.failed': 'Failed',
  'ses.completed': 'Completed',
  'run.running': 'running',
  'run.succeeded': 'succeeded',
  'run.failed': 'failed',
  'run.timed_out': 'timed out',
  'run.cancelled': 'cancelled',
  'timer.active': 'active',
  'timer.completed': 'completed',
  'timer.cancelled': 'cancelled',
  'timer.once': 'Once',
  'timer.recurring': 'Recurring',
  'timer.next': 'next {t}',
  'timer.every': 'every {n}',
  'timer.description': 'What the agent should do then',
  'timer.minutes': 'In minutes',
  'role.rd': 'RD',
  'role.reviewer': 'Review',
  'card.pending': '{n} pending',
  'card.children': '{n} sub-requirements',
  'card.stale': 'stale',
  'card.review': 'review {s}',
  'detail.back': 'Back to boards',
  'detail.notFound': 'This requirement does not exist (any more).',
  'detail.description': 'Description',
  'detail.provider': 'Provider',
  'detail.model': 'Model',
  'detail.effort': 'Effort',
  'detail.default': 'default',
  'detail.status': 'Status',
  'detail.session': 'Session',
  'detail.parent': 'Parent',
  'detail.pullRequests': 'Pull requests',
  'detail.noPullRequests': 'No pull requests yet.',
  'detail.runs': 'Runs',
  'detail.noRuns': 'No runs yet.',
  'detail.tokens': '{i} in · {o} out',
  'detail.conversation': 'Conversation',
  'detail.trace': 'Trace',
  'detail.noTrace': 'No trace yet.',
  'detail.timers': 'Timers',
  'detail.noTimers': 'No timers.',
  'detail.lastError': 'Last error',
  'action.start': 'Start',
  'action.steer': 'Steer',
  'action.stop': 'Stop',
  'action.confirm': 'Confirm done',
  'action.delete': 'Delete',
  'action.deleteAsk': 'Delete this requirement? It has not started and will be cancelled.',
  'action.send': 'Send',
  'action.attach': 'Attach files',
  'action.remove': 'Remove',
  'action.cancel': 'Cancel',
  'action.create': 'Create',
  'action.save': 'Save',
  'action.close': 'Close',
  'action.requestReview': 'Request review',
  'action.addTimer': 'Add timer',
  'action.cancelTimer': 'Cancel timer',
  'action.jumpLatest': 'Jump to latest',
  'action.earlier': 'Show earlier',
  'action.showOutput': 'Output',
  'steer.hint': 'Stop the current run and continue at once with the newer messages',
  'composer.label': 'Message',
  'composer.placeholder': 'Write to the agent… (Ctrl+Enter sends; paste or drop files)',
  'composer.queued': 'Queued — the agent reads it after the current run',
  'composer.tooMany': 'At most {n} attachments per message',
  'composer.uploading': 'Uploading…',
  'author.human': 'You',
  'author.rd_agent': 'Agent',
  'author.reviewer': 'Reviewer',
  'author.system': 'System',
  'msg.queued': 'queued',
  'msg.source': 'via {s}',
  'msg.related': 'from related requirement',
  'msg.empty': 'No messages yet. Write the first one, or press Start.',
  'create.title': 'New requirement',
  'create.name': 'Title',
  'create.description': 'Description (Markdown)',
  'create.startNow': 'Start right away',
  'review.title': 'Request a review',
  'review.prompt': 'Focus (optional)',
  'settings.title': 'Settings',
  'settings.file': 'Configuration file',
  'settings.restart': 'Restart required',
  'settings.restartPending': 'Changed fields take effect after a restart: {f}',
  'settings.saved': 'Settings saved',
  'settings.overridden': 'overridden by a flag or variable',
  'settings.notifications': 'Browser notifications when a run finishes',
  'notify.finished': 'Run {s}',
  'time.minutes': '{n} min',
  'time.seconds': '{n} s',
} as const;

export type I18nKey = keyof typeof en;
type Dictionary = Record<I18nKey, string>;

const zh: Dictionary = {
  'app.title': 'Agent Manager',
  'nav.requirements': '需求',
  'nav.pullRequests': '拉取请求',
  'nav.sessions': '会话',
  'nav.timers': '定时器',
  'nav.main': '看板',
  'conn.live': '实时',
  'conn.connecting': '连接中…',
  'conn.offline': '离线 — 正在重试',
  'action.new': '新建需求',
  'action.settings': '设置',
  'action.theme': '主题',
  'action.language': '语言',
  'theme.system': '跟随系统',
  'theme.light': '浅色',
  'theme.dark': '深色',
  'filter.text': '筛选',
  'filter.created': '创建时间',
  'filter.24h': '最近 24 小时',
  'filter.7d': '最近 7 天',
  'filter.30d': '最近 30 天',
  'filter.90d': '最近 90 天',
  'filter.all': '全部',
  'board.empty': '暂无内容',
  'board.loading': '加载中…',
  'board.more': '再显示 {n} 条',
  'req.todo': '待办',
  'req.doing': '进行中',
  'req.waiting_confirmation': '等待确认',
  'req.done': '已完成',
  'req.cancelled': '已取消',
  'pr.draft': '草稿',
  'pr.open': '打开',
  'pr.closed': '已关闭',
  'pr.merged': '已合并',
  'ses.idle': '空闲',
  'ses.running': '运行中',
  'ses.waiting_human': '等待人工',
  'ses.failed': '失败',
  'ses.completed': '已完成',
  'run.running': '运行中',
  'run.succeeded': '成功',
  'run.failed': '失败',
  'run.timed_out': '超时',
  'run.cancelled': '已取消',
  'timer.active': '生效中',
  'timer.completed': '已完成',
  'timer.cancelled': '已取消',
  'timer.once': '一次',
  'timer.recurring': '重复',
  'timer.next': '下次 {t}',
  'timer.every': '每 {n}',
  'timer.description': '届时智能体要做什么',
  'timer.minutes': '分钟后',
  'role.rd': '研发',
  'role.reviewer': '评审',
  'card.pending': '{n} 条待处理',
  'card.children': '{n} 个子需求',
  'card.stale': '已过期',
  'card.review': '评审 {s}',
  'detail.back': '返回看板',
  'detail.notFound': '该需求不存在（或已被清理）。',
  'detail.description': '描述',
  'detail.provider': '提供方',
  'detail.model': '模型',
  'detail.effort': '推理强度',
  'detail.default': '默认',
  'detail.status': '状态',
  'detail.session': '会话',
  'detail.parent': '父需求',
  'detail.pullRequests': '拉取请求',
  'detail.noPullRequests': '还没有拉取请求。',
  'detail.runs': '运行',
  'detail.noRuns': '还没有运行。',
  'detail.tokens': '输入 {i} · 输出 {o}',
  'detail.conversation': '对话',
  'detail.trace': '轨迹',
  'detail.noTrace': '还没有轨迹。',
  'detail.timers': '定时器',
  'detail.noTimers': '没有定时器。',
  'detail.lastError': '最近错误',
  'action.start': '开始',
  'action.steer': '转向',
  'action.stop': '停止',
  'action.confirm': '确认完成',
  'action.delete': '删除',
  'action.deleteAsk': '删除此需求？它尚未开始，将被取消。',
  'action.send': '发送',
  'action.attach': '添加附件',
  'action.remove': '移除',
  'action.cancel': '取消',
  'action.create': '创建',
  'action.save': '保存',
  'action.close': '关闭',
  'action.requestReview': '请求评审',
  'action.addTimer': '添加定时器',
  'action.cancelTimer': '取消定时器',
  'action.jumpLatest': '跳到最新',
  'action.earlier': '显示更早',
  'action.showOutput': '输出',
  'steer.hint': '停止当前运行，并立即带着新消息继续',
  'composer.label': '消息',
  'composer.placeholder': '写给智能体…（Ctrl+Enter 发送；可粘贴或拖入文件）',
  'composer.queued': '已排队 — 智能体会在当前运行结束后读取',
  'composer.tooMany': '每条消息最多 {n} 个附件',
  'composer.uploading': '上传中…',
  'author.human': '你',
  'author.rd_agent': '智能体',
  'author.reviewer': '评审者',
  'author.system': '系统',
  'msg.queued': '已排队',
  'msg.source': '来自 {s}',
  'msg.related': '来自相关需求',
  'msg.empty': '还没有消息。写第一条，或点击开始。',
  'create.title': '新建需求',
  'create.name': '标题',
  'create.description': '描述（Markdown）',
  'create.startNow': '立即开始',
  'review.title': '请求评审',
  'review.prompt': '关注点（可选）',
  'settings.title': '设置',
  'settings.file': '配置文件',
  'settings.restart': '需要重启',
  'settings.restartPending': '以下字段在重启后生效：{f}',
  'settings.saved': '设置已保存',
  'settings.overridden': '已被启动参数或环境变量覆盖',
  'settings.notifications': '运行结束时发送浏览器通知',
  'notify.finished': '运行{s}',
  'time.minutes': '{n} 分钟',
  'time.seconds': '{n} 秒',
};

export type Language = 'en' | 'zh-CN';
const DICTIONARIES: Record<Language, Dictionary> = { en, 'zh-CN': zh };
const KEY = 'am.language';

function initialLanguage(): Language {
  const saved = localStorage.getItem(KEY);
  if (saved === 'en' || saved === 'zh-CN') {
    return saved;
  }
  return navigator.languages.some((l) => l.toLowerCase().startsWith('zh')) ? 'zh-CN' : 'en';
}

@Injectable({ providedIn: 'root' })
export class I18n {
  readonly language = signal<Language>(initialLanguage());
  private readonly dictionary = computed(() => DICTIONARIES[this.language()]);
  readonly locale = computed(() => (this.language() === 'zh-CN' ? 'zh-CN' : 'en-GB'));

  constructor() {
    document.documentElement.lang = this.language();
  }

  /** Reading it in a template tracks the language signal, so text switches without a reload. */
  readonly t = (key: I18nKey, params?: Record<string, string | number>): string => {
    // An unknown key shows itself rather than nothing, so a gap is visible.
    let text: string = this.dictionary()[key] ?? key;
    if (params) {
      for (const [name, value] of Object.entries(params)) {
        text = text.replace(`{${name}}`, String(value));
      }
    }
    return text;
  };

  setLanguage(language: Language): void {
    this.language.set(language);
    localStorage.setItem(KEY, language);
    document.documentElement.lang = language;
  }

  /** Short local date-time. */
  dateTime(iso: string | null): string {
    if (!iso) {
      return '';
    }
    return new Date(iso).toLocaleString(this.locale(), { dateStyle: 'short', timeStyle: 'short' });
  }

  /** 90 → "90 s", 3600 → "60 min": short and unambiguous in both languages. */
  interval(seconds: number): string {
    return seconds < 120 ? this.t('time.seconds', { n: seconds }) : this.t('time.minutes', { n: Math.round(seconds / 60) });
  }

  duration(fromIso: string, toIso: string | null, now = Date.now()): string {
    const ms = (toIso ? Date.parse(toIso) : now) - Date.parse(fromIso);
    const s = Math.max(0, Math.round(ms / 1000));
    return s < 120 ? this.t('time.seconds', { n: s }) : this.t('time.minutes', { n: Math.round(s / 60) });
  }
}
