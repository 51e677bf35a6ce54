import type { Command } from './commands/command.js';

const kebab = (flag: string) => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

export const COMPLETION_SHELLS = ['bash', 'zsh', 'fish'];

export const COMPLETION_USAGE = `
  Print a shell completion script: commands and their options complete with Tab

  Usage
    $ prospect completion bash|zsh|fish

  Examples
    $ eval "$(prospect completion bash)"     # in ~/.bashrc; completes \`npx prospect\` too
    $ eval "$(prospect completion zsh)"      # in ~/.zshrc
    $ prospect completion fish | source      # in ~/.config/fish/config.fish
`;

/**
 * `prospect completion bash|zsh|fish`: a script completing command names and each
 * command's options, made from the same declarations the dispatcher runs.
 */
export function completionScript(shell: string, commands: Command[]): string | undefined {
  const names = ['help', 'completion', ...commands.map((c) => c.name)];
  // A boolean flag on by default is typed as its negation (`--no-browser`); one with no default either way (`--store`, `--no-store`).
  const spellings = ([name, spec]: [string, Command['flags'][string]]) =>
    spec.type !== 'boolean' ? [kebab(name)] : spec.default === true ? [`--no-${kebab(name).slice(2)}`] : spec.default === undefined ? [kebab(name), `--no-${kebab(name).slice(2)}`] : [kebab(name)];
  const flagsOf = (c: Command) => [...Object.entries(c.flags).flatMap(spellings), '--help'];
  // Per command: what completes after it (its options; a shell or a command for the two built-ins).
  const cases: Array<[string, string[]]> = [
    ...commands.map((c): [string, string[]] => [c.name, flagsOf(c)]),
    ['completion', [...COMPLETION_SHELLS, '--help']],
    ['help', commands.map((c) => c.name)],
  ];
  switch (shell) {
    case 'bash':
      // bash splits the line at every character of COMP_WORDBREAKS, ':' among them, so
      // `prospect auth:wh` reaches a completion function as "auth" ":" "wh". As npm's own
      // completion does, the words are taken from the line instead, and the candidates lose the
      // part before the last ':' that bash keeps in place. Registered for npx too: there it
      // completes only after `npx prospect`, and leaves anything else to bash's default.
      return `# prospect completion for bash: eval "$(prospect completion bash)"
_prospect() {
  local line=\${COMP_LINE:0:COMP_POINT} cur="" first=1
  local -a words
  read -r -a words <<< "$line"
  if [[ $line != *[[:space:]] && \${#words[@]} -gt 0 ]]; then
    cur=\${words[\${#words[@]}-1]}
    unset "words[\${#words[@]}-1]"
  fi
  COMPREPLY=()
  if [[ \${words[0]##*/} == npx ]]; then
    if [[ \${#words[@]} -eq 1 ]]; then COMPREPLY=($(compgen -W "prospect" -- "$cur")); return; fi
    [[ \${words[1]} == prospect ]] || return
    first=2
  fi
  local candidates
  if [[ \${#words[@]} -eq $first ]]; then
    candidates="${names.join(' ')}"
  else
    case "\${words[$first]}" in
${cases.map(([name, words]) => `      ${name}) candidates="${words.join(' ')}" ;;`).join('\n')}
      *) return ;;
    esac
  fi
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
  if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
    local kept=\${cur%"\${cur##*:}"}
    COMPREPLY=("\${COMPREPLY[@]#"$kept"}")
  fi
}
complete -F _prospect prospect
complete -o default -F _prospect npx
`;
    case 'zsh':
      // zsh keeps `auth:whoami` one word; compadd (not _describe, which reads ':' as the start
      // of a description) offers the names as they are.
      return `# prospect completion for zsh: eval "$(prospect completion zsh)"
(( $+functions[compdef] )) || { autoload -Uz compinit && compinit; }
_prospect() {
  local first=2
  [[ $words[1] == npx ]] && first=3
  if (( CURRENT == first )); then compadd -- ${names.join(' ')}; return; fi
  case $words[first] in
${cases.map(([name, words]) => `    ${name}) compadd -- ${words.join(' ')} ;;`).join('\n')}
  esac
}
compdef _prospect prospect
`;
    case 'fish':
      return `# prospect completion for fish: prospect completion fish | source
complete -c prospect -f
complete -c prospect -n __fish_use_subcommand -a "${names.join(' ')}"
${cases.map(([name, words]) => `complete -c prospect -n "__fish_seen_subcommand_from ${name}" -a "${words.join(' ')}"`).join('\n')}
`;
    default:
      return undefined;
  }
}
