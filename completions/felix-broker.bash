# bash completion for felix-broker(8)                       -*- shell-script -*-
#
# Subcommands (control-plane, run), each one's flags, the values of
# --fsync-mode (none periodic on_commit), directories for --data-dir and files
# for --db, --token-file, --admin-token-file and --broker-token-file.
# Works with or without the bash-completion package.

_felix_broker() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}

    local subcommands="control-plane run"
    local cp_opts="--listen --db --lease-ms --admin-token-file --broker-token-file --help -h"
    local run_opts="--id --data-dir --listen --http --control-plane --token-file --fsync-mode --fsync-interval-ms --help -h"

    # The subcommand is the first word after the program.
    local sub=""
    ((COMP_CWORD > 1)) && sub=${COMP_WORDS[1]}

    local line
    COMPREPLY=()
    case $prev in
    --fsync-mode)
        COMPREPLY=($(compgen -W "none periodic on_commit" -- "$cur"))
        return 0
        ;;
    --data-dir)
        while IFS= read -r line; do
            [[ -n $line ]] && COMPREPLY+=("$line")
        done < <(compgen -d -- "$cur")
        if ((${#COMPREPLY[@]} == 1)) && [[ -d ${COMPREPLY[0]} ]]; then
            compopt -o nospace 2>/dev/null
            COMPREPLY[0]+=/
        fi
        return 0
        ;;
    --db | --token-file | --admin-token-file | --broker-token-file)
        while IFS= read -r line; do
            [[ -n $line ]] && COMPREPLY+=("$line")
        done < <(compgen -f -- "$cur")
        return 0
        ;;
    --id | --listen | --http | --control-plane | --fsync-interval-ms | --lease-ms)
        # A name, an address or a number: nothing to offer.
        return 0
        ;;
    esac

    case $sub in
    "")
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--help -h --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
        fi
        ;;
    control-plane) COMPREPLY=($(compgen -W "$cp_opts" -- "$cur")) ;;
    run) COMPREPLY=($(compgen -W "$run_opts" -- "$cur")) ;;
    esac
    return 0
}

complete -F _felix_broker -o filenames felix-broker
