# fish completion for felixctl(1): commands and subcommands, global options,
# each command's options, the values of -o, --acks, --state and completion,
# and stream names, shards (STREAM/N) and broker ids asked from the control
# plane (with the line's --control-plane and --token-file, or the
# environment), and context names from the config file. Install with
#   felixctl completion fish > ~/.config/fish/completions/felixctl.fish

set -l commands cluster broker stream shard placement produce consume top config completion version

# __felixctl_live streams|shards|brokers|contexts — names from the control
# plane (contexts: from the config file).
function __felixctl_live
    set -l words (commandline -opc)
    set -l pass
    for i in (seq 1 (math (count $words) - 1))
        if contains -- $words[$i] --control-plane --token-file --context
            set pass $pass $words[$i] $words[(math $i + 1)]
        end
    end
    switch $argv[1]
        case streams
            felixctl $pass --timeout-ms 1000 stream list 2>/dev/null | awk 'NR > 1 { print $1 }'
        case shards
            felixctl $pass --timeout-ms 1000 shard list 2>/dev/null | awk 'NR > 1 { print $1 "/" $2 }'
        case brokers
            felixctl $pass --timeout-ms 1000 broker list 2>/dev/null | awk 'NR > 1 { print $1 }'
        case contexts
            felixctl config get-contexts 2>/dev/null | awk 'NR > 1 { print $2 }'
    end
end

complete -c felixctl -f
complete -c felixctl -l control-plane -x -d 'Control plane base URL'
complete -c felixctl -l token-file -r -F -d 'File holding the admin token'
complete -c felixctl -l context -x -a '(__felixctl_live contexts)' -d 'Take control plane and token file from this context'
complete -c felixctl -s o -l output -x -a 'table wide json yaml' -d 'Output format'
complete -c felixctl -l timeout-ms -x -d 'Give up on a request after N ms'
complete -c felixctl -s h -l help -d 'Show help'
complete -c felixctl -l version -d 'Print the version'

complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a cluster -d 'Show brokers alive, streams and shards by state'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a broker -d 'List brokers or describe one'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a stream -d 'Create, list, describe, delete or adopt streams'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a shard -d 'List shards or describe one'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a placement -d "A shard's placement history, or abandon a stuck shard"
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a produce -d 'Publish stdin, one record per line'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a consume -d "Print a shard's records, one per line"
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a top -d 'Live view of brokers, shards and events'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a config -d 'List, pick or set the contexts of the config file'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a completion -d 'Print a shell completion script'
complete -c felixctl -n "not __fish_seen_subcommand_from $commands" -a version -d 'Print the version'

complete -c felixctl -n "__fish_seen_subcommand_from cluster; and not __fish_seen_subcommand_from status" -a status -d 'Cluster summary'
complete -c felixctl -n "__fish_seen_subcommand_from broker; and not __fish_seen_subcommand_from list describe" -a list -d 'List every broker'
complete -c felixctl -n "__fish_seen_subcommand_from broker; and not __fish_seen_subcommand_from list describe" -a describe -d 'Describe one broker'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and not __fish_seen_subcommand_from create list describe delete adopt" -a create -d 'Create a stream'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and not __fish_seen_subcommand_from create list describe delete adopt" -a list -d 'List every stream'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and not __fish_seen_subcommand_from create list describe delete adopt" -a describe -d 'Describe one stream'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and not __fish_seen_subcommand_from create list describe delete adopt" -a delete -d 'Delete a stream'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and not __fish_seen_subcommand_from create list describe delete adopt" -a adopt -d 'Bring back a stream a restored control plane does not know'
complete -c felixctl -n "__fish_seen_subcommand_from shard; and not __fish_seen_subcommand_from list describe" -a list -d 'List shards'
complete -c felixctl -n "__fish_seen_subcommand_from shard; and not __fish_seen_subcommand_from list describe" -a describe -d 'Describe one shard'
complete -c felixctl -n "__fish_seen_subcommand_from placement; and not __fish_seen_subcommand_from history abandon" -a history -d "A shard's event history"
complete -c felixctl -n "__fish_seen_subcommand_from placement; and not __fish_seen_subcommand_from history abandon" -a abandon -d 'Re-place a stuck shard'
complete -c felixctl -n "__fish_seen_subcommand_from completion; and not __fish_seen_subcommand_from bash zsh fish" -a 'bash zsh fish'
complete -c felixctl -n "__fish_seen_subcommand_from config; and not __fish_seen_subcommand_from get-contexts use-context set-context" -a get-contexts -d 'List the contexts'
complete -c felixctl -n "__fish_seen_subcommand_from config; and not __fish_seen_subcommand_from get-contexts use-context set-context" -a use-context -d 'Make a context the current one'
complete -c felixctl -n "__fish_seen_subcommand_from config; and not __fish_seen_subcommand_from get-contexts use-context set-context" -a set-context -d 'Create or change a context'
complete -c felixctl -n "__fish_seen_subcommand_from config; and __fish_seen_subcommand_from use-context set-context; and test (count (commandline -opc)) -le 3" -a '(__felixctl_live contexts)' -d 'Context'

complete -c felixctl -n "__fish_seen_subcommand_from stream; and __fish_seen_subcommand_from create" -l shards -x -d 'Number of shards'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and __fish_seen_subcommand_from create" -l replicas -x -d 'Copies of each shard'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and __fish_seen_subcommand_from create" -l acks -x -a 'quorum leader all' -d 'Ack policy'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and __fish_seen_subcommand_from delete" -l yes -d 'Delete without asking'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and __fish_seen_subcommand_from adopt" -l uuid -x -d 'The stream to adopt among several of that name'
complete -c felixctl -n "__fish_seen_subcommand_from cluster broker shard; and __fish_seen_subcommand_from status list" -l watch -d 'Run again every 2 s until Ctrl-C'
complete -c felixctl -n "__fish_seen_subcommand_from shard; and __fish_seen_subcommand_from list" -l state -x -a 'Active Fencing NoCaughtUpReplica' -d 'Only shards in this state'
complete -c felixctl -n "__fish_seen_subcommand_from placement; and __fish_seen_subcommand_from abandon" -l dry-run -d 'Show the copy it would keep'
complete -c felixctl -n "__fish_seen_subcommand_from placement; and __fish_seen_subcommand_from abandon" -l yes -d 'Act on what the dry run showed'
complete -c felixctl -n "__fish_seen_subcommand_from placement; and __fish_seen_subcommand_from abandon" -l expect-generation -x -d 'The generation the dry run showed'
complete -c felixctl -n "__fish_seen_subcommand_from placement; and __fish_seen_subcommand_from abandon" -l expect-copy -x -d 'The copy the dry run chose'
complete -c felixctl -n "__fish_seen_subcommand_from placement; and __fish_seen_subcommand_from abandon" -l expect-digest -x -d 'The live copies the dry run saw'
complete -c felixctl -n "__fish_seen_subcommand_from placement; and __fish_seen_subcommand_from abandon" -l above-generation -x -d 'While it still waits: no copy holds a generation above this'
complete -c felixctl -n "__fish_seen_subcommand_from produce" -l shard -x -d 'Publish to this shard only'
complete -c felixctl -n "__fish_seen_subcommand_from produce" -l acks -x -a 'quorum leader all' -d 'Ack policy'
complete -c felixctl -n "__fish_seen_subcommand_from consume" -l shard -x -d 'The shard to read'
complete -c felixctl -n "__fish_seen_subcommand_from consume" -l from -x -d 'First offset to read'
complete -c felixctl -n "__fish_seen_subcommand_from consume" -l count -x -d 'Stop after N records'
complete -c felixctl -n "__fish_seen_subcommand_from consume" -l follow -d 'Keep waiting for new records'
complete -c felixctl -n "__fish_seen_subcommand_from produce consume" -l wait -x -d 'Wait this long for a leader (10s)'

# Names from the control plane for the commands' one argument.
complete -c felixctl -n "__fish_seen_subcommand_from produce consume; and test (count (commandline -opc)) -le 2" -a '(__felixctl_live streams)' -d 'Stream'
complete -c felixctl -n "__fish_seen_subcommand_from stream; and __fish_seen_subcommand_from describe delete" -a '(__felixctl_live streams)' -d 'Stream'
complete -c felixctl -n "__fish_seen_subcommand_from shard placement; and __fish_seen_subcommand_from describe history abandon" -a '(__felixctl_live shards)' -d 'Shard'
complete -c felixctl -n "__fish_seen_subcommand_from broker; and __fish_seen_subcommand_from describe" -a '(__felixctl_live brokers)' -d 'Broker'
