# bash completion for felix-broker(8)                       -*- shell-script -*-
#
# Subcommands (control-plane, run, restore-point and its create, list, verify,
# restore), each one's flags, the values of --fsync-mode (none periodic
# on_commit), directories for --data-dir, --to and --from, files for --db,
# --token-file, --admin-token-file and --broker-token-file, and for --shard
# the STREAM/N of the shard directories under the --data-dir or --from given
# earlier on the line.
# Works with or without the bash-completion package.

# STREAM/N of every shard directory (STREAM_N-UUID16) under the --from
# restore point or, failing that, the --data-dir named earlier on the line.
_felix_broker_shards() {
    local i dir="" d name
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --from) dir=${COMP_WORDS[i + 1]} ;;
        --data-dir) [[ -z $dir ]] && dir=${COMP_WORDS[i + 1]} ;;
        esac
    done
    [[ -d $dir/shards ]] || return 0
    for d in "$dir"/shards/*_*-*; do
        [[ -d $d ]] || continue
        name=${d##*/}
        name=${name%-*}
        printf '%s/%s\n' "${name%_*}" "${name##*_}"
    done
}

_felix_broker() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}

    local subcommands="control-plane run restore-point version"
    local rp_commands="create list verify restore prune"
    local rp_create_opts="--data-dir --to --shard --json --help -h"
    local rp_list_opts="--from --json --help -h"
    local rp_verify_opts="--from --shard --json --help -h"
    local rp_restore_opts="--from --data-dir --shard --json --help -h"
    local rp_prune_opts="--from --keep --older-than --dry-run --json --help -h"
    local cp_opts="--listen --db --lease-ms --admin-token-file --broker-token-file --log-level --help -h"
    local run_opts="--id --data-dir --listen --http --control-plane --token-file --fsync-mode --fsync-interval-ms --log-level --help -h"

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
    --log-level)
        COMPREPLY=($(compgen -W "debug info warn error" -- "$cur"))
        return 0
        ;;
    --data-dir | --to | --from)
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
    --shard)
        COMPREPLY=($(compgen -W "$(_felix_broker_shards)" -- "$cur"))
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
    restore-point)
        local rp=""
        ((COMP_CWORD > 2)) && rp=${COMP_WORDS[2]}
        case $rp in
        "") COMPREPLY=($(compgen -W "$rp_commands --help -h" -- "$cur")) ;;
        create) COMPREPLY=($(compgen -W "$rp_create_opts" -- "$cur")) ;;
        list) COMPREPLY=($(compgen -W "$rp_list_opts" -- "$cur")) ;;
        verify) COMPREPLY=($(compgen -W "$rp_verify_opts" -- "$cur")) ;;
        restore) COMPREPLY=($(compgen -W "$rp_restore_opts" -- "$cur")) ;;
        prune) COMPREPLY=($(compgen -W "$rp_prune_opts" -- "$cur")) ;;
        esac
        ;;
    esac
    return 0
}

complete -F _felix_broker -o filenames felix-broker
