// Agents for the quarterly compliance example. Each receives exactly its declared ctx.input and
// returns a plain object; the executor wires and checks everything else.

const LEDGERS = {
  'ledger-eu': { '2026-Q2': [4_100_000, 3_350_000], '2026-Q3': [4_600_000, 4_480_000] },
};
const HR = { '2026-Q2': [212, 0.04], '2026-Q3': [205, 0.11] };

export default {
  'data-agent': async (ctx) => {
    if (ctx.phase === 'fetch_financials') {
      const figures = LEDGERS[ctx.input.source]?.[ctx.input.quarter];
      if (!figures) throw Object.assign(new Error(`no ledger for ${ctx.input.quarter}`), { code: 'NOT_FOUND' });
      const [revenue, expenses] = figures;
      return { revenue, expenses, _cost: 0.01 };
    }
    const hr = HR[ctx.input.quarter];
    if (!hr) throw Object.assign(new Error(`no HR data for ${ctx.input.quarter}`), { code: 'NOT_FOUND' });
    return { headcount: hr[0], attrition_rate: hr[1], _cost: 0.01 };
  },

  'analytics-agent': async (ctx) => {
    const { fin_revenue, fin_expenses, hr_headcount, hr_attrition } = ctx.input;
    const findings = [];
    const margin = (fin_revenue - fin_expenses) / fin_revenue;
    if (margin < 0.05) findings.push({ rule: 'FIN-01 operating margin', severity: 'high', detail: `margin ${(margin * 100).toFixed(1)}% is under 5%` });
    if (hr_attrition > 0.1) findings.push({ rule: 'HR-03 attrition', severity: 'medium', detail: `attrition ${(hr_attrition * 100).toFixed(0)}% is over 10%` });
    if (fin_expenses / hr_headcount > 25_000) findings.push({ rule: 'FIN-07 cost per head', severity: 'low', detail: 'cost per head above the quarterly guideline' });
    const risk_level = findings.some((f) => f.severity === 'high') ? 'high' : findings.length > 0 ? 'medium' : 'low';
    ctx.reportCost(0.05);
    return { findings, risk_level, violations_found: findings.length > 0 };
  },

  'reporting-agent': async (ctx) => {
    const { analysis_findings, risk_level, has_violations } = ctx.input;
    const lines = analysis_findings.map((f) => `- [${f.severity}] ${f.rule}: ${f.detail}`);
    const summary = has_violations
      ? `Risk ${risk_level}: ${analysis_findings.length} finding(s).\n${lines.join('\n')}`
      : 'No compliance findings this quarter.';
    return { report_url: `file://reports/compliance-${ctx.runId}.md`, report_summary: summary };
  },
};
