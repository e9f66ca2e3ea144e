import type { Command, Option } from 'commander';

/**
 * Shell completion generated from the commander tree, so a new command or flag completes without
 * touching this file. Completes subcommands, the flags valid at that point (the command's own and the
 * global ones), the choices of `-o` and of `completion`'s shell argument, files for --kubeconfig,
 * directories for --dir, and contexts (via kubectl, when installed) for --context.
 */
interface Node {
  /** Space-separated path below the program: "", "auth", "auth add-token". */
  readonly path: string;
  readonly subcommands: readonly string[];
  readonly flags: readonly string[];
  /** Flag → its fixed choices. */
  readonly choices: ReadonlyMap<string, readonly string[]>;
  /** Choices of the first positional argument, if it has any. */
  readonly argChoices: readonly string[];
}

interface Tree {
  readonly nodes: readonly Node[];
  readonly globalFlags: readonly string[];
  /** Every flag (anywhere) that takes a value, so the walk can skip it. */
  readonly valueFlags: readonly string[];
}

function flagsOf(o: Option): string[] {
  return [o.short, o.long].filter((f): f is string => f !== undefined);
}

function collect(root: Command): Tree {
  const nodes: Node[] = [];
  const valueFlags = new Set<string>();
  const globals = root.options.filter((o) => !o.hidden);
  const walk = (cmd: Command, path: string) => {
    const options = cmd.options.filter((o) => !o.hidden);
    const choices = new Map<string, readonly string[]>();
    for (const o of [...options, ...globals]) {
      if (o.required || o.optional) flagsOf(o).forEach((f) => valueFlags.add(f));
      if (o.argChoices) for (const f of flagsOf(o)) choices.set(f, o.argChoices);
    }
    const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
    nodes.push({
      path,
      subcommands: subs.map((c) => c.name()),
      // The program's own options are the global ones, offered everywhere (added by the script).
      flags: path === '' ? ['--help'] : [...new Set([...options.flatMap(flagsOf), '--help'])],
      choices,
      argChoices: cmd.registeredArguments[0]?.argChoices ?? [],
    });
    for (const sub of subs) walk(sub, path === '' ? sub.name() : `${path} ${sub.name()}`);
  };
  walk(root, '');
  return { nodes, globalFlags: globals.flatMap(flagsOf), valueFlags: [...valueFlags].sort() };
}

const words = (list: readonly string[]) => list.join(' ');

function caseArms(entries: readonly (readonly [string, string])[], indent: string, zsh: boolean): string {
  return entries.map(([pattern, value]) => `${indent}${JSON.stringify(pattern)}) ${zsh ? 'reply=(' + value + ')' : `echo "${value}"`} ;;`).join('\n');
}

export function bashCompletion(root: Command, names: readonly string[]): string {
  const t = collect(root);
  const fn = `__${root.name().replace(/[^A-Za-z0-9]/g, '_')}`;
  const subArms = t.nodes.filter((n) => n.subcommands.length > 0 || n.argChoices.length > 0).map((n) => [n.path, words([...n.subcommands, ...n.argChoices])] as const);
  const flagArms = t.nodes.map((n) => [n.path, words(n.flags)] as const);
  const choiceArms = t.nodes.flatMap((n) => [...n.choices].map(([flag, values]) => [`${n.path}|${flag}`, words(values)] as const));
  return `# bash completion for ${names.join(' and ')}, generated from the command tree by \`${root.name()} completion bash\`.
# Load it with:  source <(${root.name()} completion bash)   (or save it under /etc/bash_completion.d/)
${fn}_subcommands() {
  case "$1" in
${caseArms(subArms, '    ', false)}
  esac
}
${fn}_flags() {
  case "$1" in
${caseArms(flagArms, '    ', false)}
  esac
}
${fn}_choices() {
  case "$1" in
${caseArms(choiceArms, '    ', false)}
  esac
}
${fn}_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" cmdpath="" w i skip=0
  (( COMP_CWORD > 0 )) && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  for (( i = 1; i < COMP_CWORD; i++ )); do
    w="\${COMP_WORDS[i]}"
    if (( skip )); then skip=0; continue; fi
    case " ${words(t.valueFlags)} " in *" $w "*) skip=1; continue ;; esac
    [[ "$w" == -* ]] && continue
    if [[ " $(${fn}_subcommands "$cmdpath") " == *" $w "* ]]; then cmdpath="\${cmdpath:+$cmdpath }$w"; fi
  done
  if (( skip )); then
    local values
    values="$(${fn}_choices "$cmdpath|$prev")"
    if [[ -n "$values" ]]; then COMPREPLY=( $(compgen -W "$values" -- "$cur") ); return; fi
    case "$prev" in
      --kubeconfig) compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ) ;;
      --dir) compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -d -- "$cur") ) ;;
      --context) COMPREPLY=( $(compgen -W "$(kubectl config get-contexts -o name 2>/dev/null)" -- "$cur") ) ;;
      *) COMPREPLY=() ;;
    esac
    return
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$(${fn}_flags "$cmdpath") ${words(t.globalFlags)}" -- "$cur") )
  else
    COMPREPLY=( $(compgen -W "$(${fn}_subcommands "$cmdpath")" -- "$cur") )
  fi
}
${names.map((n) => `complete -F ${fn}_complete ${n}`).join('\n')}
`;
}

// (The shell variable is cmdpath, not path: in zsh, path is tied to PATH.)
/** A zsh function setting `reply` to the words of the arm its first argument names. */
function zshLookup(name: string, arms: Parameters<typeof caseArms>[0]): string {
  return `${name}() {
  reply=()
  case "$1" in
${caseArms(arms, '    ', true)}
  esac
}`;
}

export function zshCompletion(root: Command, names: readonly string[]): string {
  const t = collect(root);
  const fn = `_${root.name().replace(/[^A-Za-z0-9]/g, '_')}`;
  const subArms = t.nodes.filter((n) => n.subcommands.length > 0 || n.argChoices.length > 0).map((n) => [n.path, words([...n.subcommands, ...n.argChoices])] as const);
  const flagArms = t.nodes.map((n) => [n.path, words(n.flags)] as const);
  const choiceArms = t.nodes.flatMap((n) => [...n.choices].map(([flag, values]) => [`${n.path}|${flag}`, words(values)] as const));
  return `#compdef ${names.join(' ')}
# zsh completion for ${names.join(' and ')}, generated from the command tree by \`${root.name()} completion zsh\`.
# Load it with:  source <(${root.name()} completion zsh)   (or save it as ${fn} in a directory of $fpath)
${zshLookup(`${fn}_subcommands`, subArms)}
${zshLookup(`${fn}_flags`, flagArms)}
${zshLookup(`${fn}_choices`, choiceArms)}
${fn}() {
  local cur="\${words[CURRENT]}" prev="\${words[CURRENT-1]}" cmdpath="" w i skip=0
  local -a valueflags reply
  valueflags=(${words(t.valueFlags)})
  for (( i = 2; i < CURRENT; i++ )); do
    w="\${words[i]}"
    if (( skip )); then skip=0; continue; fi
    if (( \${valueflags[(Ie)$w]} )); then skip=1; continue; fi
    [[ "$w" == -* ]] && continue
    ${fn}_subcommands "$cmdpath"
    if (( \${reply[(Ie)$w]} )); then cmdpath="\${cmdpath:+$cmdpath }$w"; fi
  done
  if (( skip )); then
    ${fn}_choices "$cmdpath|$prev"
    if (( \${#reply} )); then compadd -- "\${reply[@]}"; return; fi
    case "$prev" in
      --kubeconfig) _files ;;
      --dir) _files -/ ;;
      --context) compadd -- \${(f)"$(kubectl config get-contexts -o name 2>/dev/null)"} ;;
    esac
    return
  fi
  if [[ "$cur" == -* ]]; then
    ${fn}_flags "$cmdpath"
    compadd -- "\${reply[@]}" ${words(t.globalFlags)}
  else
    ${fn}_subcommands "$cmdpath"
    compadd -- "\${reply[@]}"
  fi
}
if [[ "\${funcstack[1]}" == "${fn}" ]]; then
  ${fn} "$@"
else
  compdef ${fn} ${names.join(' ')}
fi
`;
}
