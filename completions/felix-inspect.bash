# bash completion for felix-inspect(1)                      -*- shell-script -*-
#
# Subcommands, --json/--help/--version anywhere, dump's --from/--limit/--payload
# (payload modes text hex none), and directories or files for the argument:
# DATADIR and SHARDDIR complete directories, SEGMENT and INDEX files.
# Works with or without the bash-completion package.

_felix_inspect() {
    local cur prev words cword
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD

    local subcommands="storage-id run-state segments dump index verify ballot"
    local global_opts="--json --help --version"
    local dump_opts="--from --limit --payload"

    # The subcommand is the first word that names one.
    local sub="" i
    for ((i = 1; i < cword; i++)); do
        case " $subcommands " in
        *" ${words[i]} "*) sub=${words[i]}; break ;;
        esac
    done

    case $prev in
    --payload)
        [[ $sub == dump ]] && COMPREPLY=($(compgen -W "text hex none" -- "$cur"))
        return 0
        ;;
    --from | --limit)
        # A number: nothing to offer.
        COMPREPLY=()
        return 0
        ;;
    esac

    if [[ $cur == -* ]]; then
        local opts=$global_opts
        [[ $sub == dump ]] && opts="$opts $dump_opts"
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return 0
    fi

    # One candidate per line, so that file names with spaces stay whole.
    local line
    COMPREPLY=()
    while IFS= read -r line; do
        [[ -n $line ]] && COMPREPLY+=("$line")
    done < <(
        case $sub in
        "") # a subcommand, or the DATADIR of the summary
            compgen -W "$subcommands" -- "$cur"
            compgen -d -- "$cur"
            ;;
        dump | index) compgen -f -- "$cur" ;;
        *) compgen -d -- "$cur" ;;
        esac
    )
    # Let directories be descended into.
    if ((${#COMPREPLY[@]} == 1)) && [[ -d ${COMPREPLY[0]} ]]; then
        compopt -o nospace 2>/dev/null
        COMPREPLY[0]+=/
    fi
    return 0
}

complete -F _felix_inspect -o filenames felix-inspect
