# bash completion for felixctl(1)                           -*- shell-script -*-
#
# Commands and subcommands, global options anywhere, each command's options,
# the values of -o, --acks, --state and completion, and stream names, shards
# (STREAM/N) and broker ids asked from the control plane (with the
# --control-plane and --token-file of the line, or the environment; nothing
# is offered when it cannot be reached within a second), and context names
# from the config file (felixctl config get-contexts). Install with
#   felixctl completion bash > /etc/bash_completion.d/felixctl
# or eval "$(felixctl completion bash)" in ~/.bashrc.

# _felixctl_live streams|shards|brokers|contexts — names from the control
# plane (contexts: from the config file).
_felixctl_live() {
    local -a pass=()
    local i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --control-plane | --token-file | --context) pass+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}") ;;
        esac
    done
    case $1 in
    streams) "${COMP_WORDS[0]}" "${pass[@]}" --timeout-ms 1000 stream list 2>/dev/null | awk 'NR > 1 { print $1 }' ;;
    shards) "${COMP_WORDS[0]}" "${pass[@]}" --timeout-ms 1000 shard list 2>/dev/null | awk 'NR > 1 { print $1 "/" $2 }' ;;
    brokers) "${COMP_WORDS[0]}" "${pass[@]}" --timeout-ms 1000 broker list 2>/dev/null | awk 'NR > 1 { print $1 }' ;;
    contexts) "${COMP_WORDS[0]}" config get-contexts 2>/dev/null | awk 'NR > 1 { print $2 }' ;;
    esac
}

_felixctl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    local global_opts="--control-plane --token-file --context -o --output --timeout-ms -h --help --version"
    local with_value="--control-plane|--token-file|--context|-o|--output|--timeout-ms|--shards|--replicas|--acks|--state|--shard|--from|--count|--expect-generation|--expect-copy|--expect-digest|--uuid|--above-generation|--wait"

    case $prev in
    --token-file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    -o | --output) COMPREPLY=($(compgen -W "table wide json yaml" -- "$cur")); return 0 ;;
    --context) COMPREPLY=($(compgen -W "$(_felixctl_live contexts)" -- "$cur")); return 0 ;;
    --acks) COMPREPLY=($(compgen -W "quorum leader all" -- "$cur")); return 0 ;;
    --state) COMPREPLY=($(compgen -W "Active Fencing NoCaughtUpReplica" -- "$cur")); return 0 ;;
    --control-plane | --timeout-ms | --shards | --replicas | --shard | --from | --count)
        COMPREPLY=(); return 0 ;;
    esac

    # The command words, skipping options and their values.
    local group="" verb="" arg="" i w
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $w == -* ]]; then
            [[ $w != *=* && "|$with_value|" == *"|$w|"* ]] && ((i++))
        elif [[ -z $group ]]; then
            group=$w
        elif [[ -z $verb ]]; then
            verb=$w
        elif [[ -z $arg ]]; then
            arg=$w
        fi
    done

    local subs="" opts=""
    case $group in
    "") subs="cluster broker stream shard placement produce consume top config completion version" ;;
    cluster) subs="status" ;;
    broker) subs="list describe" ;;
    stream) subs="create list describe delete adopt" ;;
    shard) subs="list describe" ;;
    placement) subs="history abandon" ;;
    config) subs="get-contexts use-context set-context" ;;
    completion) [[ -z $verb ]] && subs="bash zsh fish" ;;
    produce) opts="--shard --acks --wait" ;;
    consume) opts="--shard --from --count --follow --wait" ;;
    esac
    case "$group $verb" in
    "stream create") opts="--shards --replicas --acks" ;;
    "stream delete") opts="--yes" ;;
    "stream adopt") opts="--uuid" ;;
    "shard list") opts="--state --watch" ;;
    "broker list" | "cluster status") opts="--watch" ;;
    "placement abandon") opts="--dry-run --yes --expect-generation --expect-copy --expect-digest --above-generation" ;;
    esac

    # The one positional argument of these commands, once the words are in.
    local live=""
    [[ -z $arg ]] && case "$group $verb" in
    "stream describe" | "stream delete") live=streams ;;
    "shard describe" | "placement history" | "placement abandon") live=shards ;;
    "broker describe") live=brokers ;;
    "config use-context" | "config set-context") live=contexts ;;
    esac
    [[ ($group == produce || $group == consume) && -z $verb ]] && live=streams

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
    elif [[ -n $subs && ( -z $group || -z $verb ) ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    elif [[ -n $live ]]; then
        COMPREPLY=($(compgen -W "$(_felixctl_live "$live")" -- "$cur"))
    else
        COMPREPLY=()
    fi
    return 0
}

complete -F _felixctl felixctl
