import type { Command } from './commands/command.js';

const kebab = (flag: string) => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/**
 * `prospect completion bash|zsh|fish`: a script completing command names and each
 * command's options, made from the same declarations the dispatcher runs.
 */
export function completionScript(shell: string, commands: Command[]): string | undefined {
  const names = ['help', 'completion', ...commands.map((c) => c.name)];
  const flagsOf = (c: Command) => [...Object.keys(c.flags).map(kebab), '--help'];
  switch (shell) {
    case 'bash':
      return `# prospect completion for bash: eval "$(prospect completion bash)"
_prospect() {
  local cur=\${COMP_WORDS[COMP_CWORD]}
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=($(compgen -W "${names.join(' ')}" -- "$cur")); return; fi
  case "\${COMP_WORDS[1]}" in
${commands.map((c) => `    ${c.name}) COMPREPLY=($(compgen -W "${flagsOf(c).join(' ')}" -- "$cur")) ;;`).join('\n')}
    completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
    help) COMPREPLY=($(compgen -W "${commands.map((c) => c.name).join(' ')}" -- "$cur")) ;;
  esac
}
complete -F _prospect prospect
`;
    case 'zsh':
      return `# prospect completion for zsh: eval "$(prospect completion zsh)"
autoload -U +X bashcompinit && bashcompinit
${completionScript('bash', commands)!.split('\n').slice(1).join('\n')}`;
    case 'fish':
      return `# prospect completion for fish: prospect completion fish | source
complete -c prospect -f
complete -c prospect -n __fish_use_subcommand -a "${names.join(' ')}"
${commands.map((c) => `complete -c prospect -n "__fish_seen_subcommand_from ${c.name}" -a "${flagsOf(c).join(' ')}"`).join('\n')}
complete -c prospect -n "__fish_seen_subcommand_from completion" -a "bash zsh fish"
`;
    default:
      return undefined;
  }
}
