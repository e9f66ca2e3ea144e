// Shell completion (bash, zsh, fish, kubectl's plugin completion), generated from the command tree.
import type { CommandUnknownOpts as Command, Option } from '@commander-js/extra-typings';

/**
 * Shell completion generated from the commander tree, so a new command or flag completes without
 * touching this file. Completes subcommands, the flags valid at that point (the command's own and the
 * global ones), the choices of `-o` and of `completion`'s shell argument, files for --kubeconfig and --from-file,
 * directories for --dir, and contexts (via kubectl, when installed) for --context.
 *
 * Three scripts (bash, zsh, fish) carry the tree in themselves and need no node at each TAB; `completeWords` is the
 * same walk in TypeScript, for kubectl's plugin completion (`kubectl_complete-svc`, see kubectl-complete.ts).
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
  /** The first positional argument names a file (`import <file>`): the shell completes file names there. */
  readonly fileArgument: boolean;
  /** Subcommand or flag → its one-line description (fish and kubectl show them). */
  readonly described: ReadonlyMap<string, string>;
}

interface Tree {
  readonly nodes: readonly Node[];
  readonly globalFlags: readonly string[];
  /** Every flag (anywhere) that takes a value, so the walk can skip it. */
  readonly valueFlags: readonly string[];
  readonly globalDescribed: ReadonlyMap<string, string>;
}

function flagsOf(o: Option): string[] {
  return [o.short, o.long].filter((f): f is string => f !== undefined);
}

/** The first line of a description, short enough for a completion menu. */
function brief(text: string): string {
  const line = text.split('\n')[0]!.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

function described(options: readonly Option[], subs: readonly Command[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const c of subs) map.set(c.name(), brief(c.description()));
  for (const o of options) for (const f of flagsOf(o)) map.set(f, brief(o.description));
  return map;
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
    const first = cmd.registeredArguments[0];
    nodes.push({
      path,
      subcommands: subs.map((c) => c.name()),
      // The program's own options are the global ones, offered everywhere (added by the script).
      flags: path === '' ? ['--help'] : [...new Set([...options.flatMap(flagsOf), '--help'])],
      choices,
      argChoices: first?.argChoices ?? [],
      fileArgument: first?.name() === 'file',
      described: new Map([...described(path === '' ? [] : options, subs), ['--help', 'display help for command']]),
    });
    for (const sub of subs) walk(sub, path === '' ? sub.name() : `${path} ${sub.name()}`);
  };
  walk(root, '');
  return { nodes, globalFlags: globals.flatMap(flagsOf), valueFlags: [...valueFlags].sort(), globalDescribed: described(globals, []) };
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
      --kubeconfig|--from-file) compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ) ;;
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
      --kubeconfig|--from-file) _files ;;
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

/** A fish string literal: single quotes, where only \ and ' are escaped. */
function fishQuote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Fish lines printing `word<TAB>description` for each word (fish shows the description beside the candidate). */
function fishWords(list: readonly string[], described: ReadonlyMap<string, string>): string {
  return list.map((w) => `printf '%s\\t%s\\n' ${fishQuote(w)} ${fishQuote(described.get(w) ?? '')}`).join('; ');
}

/** A fish function printing the lines of the arm its first argument names. */
function fishLookup(name: string, arms: readonly (readonly [string, string])[]): string {
  return `function ${name}
    switch $argv[1]
${arms.map(([pattern, body]) => `        case ${fishQuote(pattern)}\n            ${body}`).join('\n')}
    end
end`;
}

/** The walk over the words typed so far, in fish: the same as bash's and zsh's. */
function fishWalk(fn: string, t: Tree): string {
  return `function ${fn}_complete
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cur (commandline -ct)
    set -l valueflags ${words(t.valueFlags)}
    set -l cmdpath ''
    set -l skip 0
    for w in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        if contains -- $w $valueflags
            set skip 1
            continue
        end
        string match -q -- '-*' $w; and continue
        if contains -- $w (${fn}_subcommands "$cmdpath" | string replace -r '\\t.*' '')
            set cmdpath (string trim -- "$cmdpath $w")
        end
    end
    if test $skip = 1
        set -l prev $tokens[-1]
        set -l values (${fn}_choices "$cmdpath|$prev")
        if test (count $values) -gt 0
            printf '%s\\n' $values
            return
        end
        switch $prev
            case --kubeconfig --from-file
                __fish_complete_path $cur
            case --dir
                __fish_complete_directories $cur
            case --context
                kubectl config get-contexts -o name 2>/dev/null
        end
        return
    end
    if string match -q -- '-*' $cur
        ${fn}_flags "$cmdpath"
        ${fishWords(t.globalFlags, t.globalDescribed)}
    else
        ${fn}_subcommands "$cmdpath"
    end
end`;
}

export function fishCompletion(root: Command, names: readonly string[]): string {
  const t = collect(root);
  const fn = `__${root.name().replace(/[^A-Za-z0-9]/g, '_')}`;
  const subArms = t.nodes
    .filter((n) => n.subcommands.length > 0 || n.argChoices.length > 0 || n.fileArgument)
    .map((n) => [n.path, [fishWords([...n.subcommands, ...n.argChoices], n.described), n.fileArgument ? '__fish_complete_path (commandline -ct)' : ''].filter((b) => b !== '').join('; ')] as const);
  const flagArms = t.nodes.map((n) => [n.path, fishWords(n.flags, n.described)] as const);
  const choiceArms = t.nodes.flatMap((n) => [...n.choices].map(([flag, values]) => [`${n.path}|${flag}`, `printf '%s\\n' ${values.map(fishQuote).join(' ')}`] as const));
  return `# fish completion for ${names.join(' and ')}, generated from the command tree by \`${root.name()} completion fish\`.
# Load it with:  ${root.name()} completion fish | source   (or save it as ~/.config/fish/completions/${names[0]}.fish)
${fishLookup(`${fn}_subcommands`, subArms)}
${fishLookup(`${fn}_flags`, flagArms)}
${fishLookup(`${fn}_choices`, choiceArms)}
${fishWalk(fn, t)}
${names.map((n) => `complete -c ${n} -f -a '(${fn}_complete)'`).join('\n')}
`;
}

/**
 * Cobra's shell completion directives, which kubectl reads from a plugin's completion executable (a last line
 * `:<n>`): 0 lets the shell complete file names, 4 completes nothing more, 16 completes directories only.
 */
export const DIRECTIVE = { files: 0, noFiles: 4, directories: 16 } as const;

interface Completion {
  /** Candidates starting with the word being completed, each `word` or `word<TAB>description`. */
  readonly candidates: readonly string[];
  readonly directive: (typeof DIRECTIVE)[keyof typeof DIRECTIVE];
  /** The word completes --context: the caller adds the kube contexts (kubectl config get-contexts -o name). */
  readonly contexts?: true;
}

/** Where the words before the one being completed lead: the command path, and the value flag awaiting a value. */
function walkWords(t: Tree, typed: readonly string[]): { node: Node; awaiting?: string } {
  let node = t.nodes.find((n) => n.path === '')!;
  let awaiting: string | undefined;
  for (const w of typed) {
    if (awaiting !== undefined) awaiting = undefined;
    else if (t.valueFlags.includes(w)) awaiting = w;
    else if (!w.startsWith('-') && node.subcommands.includes(w)) node = t.nodes.find((n) => n.path === (node.path === '' ? w : `${node.path} ${w}`)) ?? node;
  }
  return awaiting === undefined ? { node } : { node, awaiting };
}

/**
 * What to offer for `words` (the words after the program's name; the last one is being completed, "" for a new
 * one): the same walk as the scripts', for kubectl's plugin completion protocol.
 */
export function completeWords(root: Command, words: readonly string[]): Completion {
  const t = collect(root);
  const cur = words.at(-1) ?? '';
  const { node, awaiting } = walkWords(t, words.slice(0, -1));
  const offer = (list: readonly string[], described: ReadonlyMap<string, string>) =>
    list.filter((w) => w.startsWith(cur)).map((w) => (described.get(w) ? `${w}\t${described.get(w)}` : w));
  if (awaiting !== undefined) {
    const values = node.choices.get(awaiting);
    if (values) return { candidates: offer(values, new Map()), directive: DIRECTIVE.noFiles };
    if (awaiting === '--kubeconfig' || awaiting === '--from-file') return { candidates: [], directive: DIRECTIVE.files };
    if (awaiting === '--dir') return { candidates: [], directive: DIRECTIVE.directories };
    if (awaiting === '--context') return { candidates: [], directive: DIRECTIVE.noFiles, contexts: true };
    return { candidates: [], directive: DIRECTIVE.noFiles };
  }
  if (cur.startsWith('-')) {
    return { candidates: [...offer(node.flags, node.described), ...offer(t.globalFlags, t.globalDescribed)], directive: DIRECTIVE.noFiles };
  }
  const candidates = offer([...node.subcommands, ...node.argChoices], node.described);
  return { candidates, directive: node.fileArgument && candidates.length === 0 ? DIRECTIVE.files : DIRECTIVE.noFiles };
}
