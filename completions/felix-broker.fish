# fish completion for felix-broker(8): the subcommands control-plane, run and
# restore-point (create list verify restore prune), each one's flags, --fsync-mode
# values (none periodic on_commit), directories for --data-dir, --to and
# --from, files for --db, --token-file, --admin-token-file and
# --broker-token-file, and STREAM/N for --shard from the shard directories of
# the --from or --data-dir already on the line.

set -l __felix_broker_subcommands control-plane run restore-point version

function __felix_broker_rp_command
    set -l words (commandline -opc)
    test (count $words) -ge 3; and test "$words[2]" = restore-point; or return 1
    contains -- $words[3] $argv
end

function __felix_broker_shards
    set -l words (commandline -opc)
    set -l dir
    for i in (seq 1 (math (count $words) - 1))
        if test "$words[$i]" = --from
            set dir $words[(math $i + 1)]
        else if test "$words[$i]" = --data-dir; and test -z "$dir"
            set dir $words[(math $i + 1)]
        end
    end
    test -n "$dir"; and test -d "$dir/shards"; or return 0
    for d in $dir/shards/*_*-*
        test -d $d; or continue
        set -l name (string replace -r -- '-[^-]*$' '' (basename $d))
        string replace -r -- '_([0-9]+)$' '/$1' $name
    end
end

complete -c felix-broker -f

# Before a subcommand.
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -s h -l help -d 'Print the usage'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -l version -d 'Print the version'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -a control-plane -d 'Run the control plane'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -a run -d 'Run a broker'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -a restore-point -d 'Make, list, verify and restore backups'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -a version -d 'Print the version'

# control-plane
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -s h -l help -d 'Print the usage of control-plane'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l listen -x -d 'HOST:PORT to serve on'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l db -r -F -d 'The SQLite database'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l lease-ms -x -d 'Broker lease in milliseconds'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l admin-token-file -r -F -d "The operators' bearer token file"
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l broker-token-file -r -F -d "The brokers' bearer token file"
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l log-level -x -a 'debug info warn error' -d 'The lowest level logged'

# run
complete -c felix-broker -n "__fish_seen_subcommand_from run" -s h -l help -d 'Print the usage of run'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l id -x -d 'Broker id'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l data-dir -x -a '(__fish_complete_directories)' -d 'Data directory'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l listen -x -d 'Data protocol address'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l http -x -d '/live /ready /metrics address'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l control-plane -x -d 'Control plane URL'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l token-file -r -F -d "The control plane's broker token file"
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l fsync-mode -x -a 'none periodic on_commit' -d 'When appends are synced'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l fsync-interval-ms -x -d 'Periodic flush interval in ms'
complete -c felix-broker -n "__fish_seen_subcommand_from run" -l log-level -x -a 'debug info warn error' -d 'The lowest level logged'

# restore-point
set -l __felix_broker_rp create list verify restore prune
complete -c felix-broker -n "__fish_seen_subcommand_from restore-point; and not __fish_seen_subcommand_from $__felix_broker_rp" -s h -l help -d 'Print the usage of restore-point'
complete -c felix-broker -n "__fish_seen_subcommand_from restore-point; and not __fish_seen_subcommand_from $__felix_broker_rp" -a create -d 'Make a restore point of a data directory'
complete -c felix-broker -n "__fish_seen_subcommand_from restore-point; and not __fish_seen_subcommand_from $__felix_broker_rp" -a list -d 'List the complete restore points'
complete -c felix-broker -n "__fish_seen_subcommand_from restore-point; and not __fish_seen_subcommand_from $__felix_broker_rp" -a verify -d 'Check every file against the manifest'
complete -c felix-broker -n "__fish_seen_subcommand_from restore-point; and not __fish_seen_subcommand_from $__felix_broker_rp" -a restore -d 'Write a restore point into a data directory'
complete -c felix-broker -n "__fish_seen_subcommand_from restore-point; and not __fish_seen_subcommand_from $__felix_broker_rp" -a prune -d 'Remove all but the newest restore points'
complete -c felix-broker -n "__felix_broker_rp_command create list verify restore prune" -s h -l help -d 'Print the usage of restore-point'
complete -c felix-broker -n "__felix_broker_rp_command create list verify restore prune" -l json -d 'A JSON summary'
complete -c felix-broker -n "__felix_broker_rp_command create restore" -l data-dir -x -a '(__fish_complete_directories)' -d 'Data directory'
complete -c felix-broker -n "__felix_broker_rp_command create" -l to -x -a '(__fish_complete_directories)' -d 'The new restore point'
complete -c felix-broker -n "__felix_broker_rp_command list verify restore prune" -l from -x -a '(__fish_complete_directories)' -d 'The restore point'
complete -c felix-broker -n "__felix_broker_rp_command prune" -l keep -x -d 'Keep the N newest points'
complete -c felix-broker -n "__felix_broker_rp_command prune" -l older-than -x -d 'Remove only points older than this (7d)'
complete -c felix-broker -n "__felix_broker_rp_command prune" -l dry-run -d 'Say what would be removed'
complete -c felix-broker -n "__felix_broker_rp_command create verify restore" -l shard -x -a '(__felix_broker_shards)' -d 'Only this STREAM/N'
