/** The pages' only stylesheet and script, served by the app (no build step, no inline code). */
export const STYLESHEET = `:root { --fg: #1c1e21; --muted: #5f6368; --line: #d9dce1; --accent: #1a56db; --bad: #b42318; --good: #067647; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
.bar { display: flex; justify-content: space-between; align-items: center; padding: .75rem 1.25rem; background: #fff; border-bottom: 1px solid var(--line); flex-wrap: wrap; gap: .5rem; }
.brand { font-weight: 700; color: var(--fg); text-decoration: none; }
nav { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; }
main { max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 1.5rem; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
input[type=text], input[type=email], input[type=password] { width: 100%; padding: .6rem .7rem; font: inherit; border: 1px solid var(--line); border-radius: 6px; }
input:focus, button:focus { outline: 3px solid #a4c2f4; outline-offset: 1px; }
button, .button { display: inline-block; margin-top: 1.25rem; padding: .6rem 1.1rem; font: inherit; font-weight: 600; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; }
button.secondary { background: #fff; color: var(--fg); border-color: var(--line); }
button.danger { background: #fff; color: var(--bad); border-color: var(--bad); }
button.link { margin: 0; padding: 0; border: 0; background: none; color: var(--accent); font-weight: 400; }
.inline { display: inline; }
.muted { color: var(--muted); }
.error { color: var(--bad); background: #fef3f2; border: 1px solid #fecdca; padding: .6rem .8rem; border-radius: 6px; }
.success { color: var(--good); background: #ecfdf3; border: 1px solid #abefc6; padding: .6rem .8rem; border-radius: 6px; }
.code { font: 700 2.25rem/1.2 ui-monospace, "SFMono-Regular", Menlo, monospace; letter-spacing: .12em; text-align: center; padding: 1rem; margin: 1rem 0; background: var(--bg); border: 2px dashed var(--line); border-radius: 8px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 1rem 0; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
.actions { display: flex; gap: .75rem; flex-wrap: wrap; }
table { width: 100%; border-collapse: collapse; font-size: .9rem; }
th, td { text-align: left; padding: .5rem .4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.token { width: 100%; font: .95rem ui-monospace, Menlo, monospace; padding: .6rem; border: 1px solid var(--line); border-radius: 6px; }
code { font-family: ui-monospace, Menlo, monospace; background: var(--bg); padding: .1rem .3rem; border-radius: 4px; }
/* A command to copy: one line (never broken at a hyphen inside a flag), scrolled when narrow. */
code.command { display: block; white-space: pre; overflow-x: auto; padding: .5rem .6rem; }
@media (max-width: 520px) { main { margin: 1rem auto; } .card { padding: 1rem; } .code { font-size: 1.8rem; } thead { display: none; } td { display: block; border: 0; padding: .15rem 0; } tr { display: block; border-bottom: 1px solid var(--line); padding: .5rem 0; } td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); } td[data-label=Name]::before { content: none; } }
`;

/** Progressive enhancement: the token is selectable without it. */
export const COPY_SCRIPT = `document.querySelectorAll('[data-copy]').forEach((button) => {
  button.hidden = false;
  button.addEventListener('click', async () => {
    const field = document.getElementById(button.dataset.copy);
    field.select();
    try { await navigator.clipboard.writeText(field.value); } catch { document.execCommand('copy'); }
    button.textContent = 'Copied';
  });
});
`;
