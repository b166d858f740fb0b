# fish completion for felix-broker(8): the subcommands control-plane and run,
# each one's flags, --fsync-mode values (none periodic on_commit),
# directories for --data-dir, files for --db, --token-file,
# --admin-token-file and --broker-token-file.

set -l __felix_broker_subcommands control-plane run

complete -c felix-broker -f

# Before a subcommand.
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -s h -l help -d 'Print the usage'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -l version -d 'Print the version'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -a control-plane -d 'Run the control plane'
complete -c felix-broker -n "not __fish_seen_subcommand_from $__felix_broker_subcommands" -a run -d 'Run a broker'

# control-plane
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -s h -l help -d 'Print the usage of control-plane'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l listen -x -d 'HOST:PORT to serve on'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l db -r -F -d 'The SQLite database'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l lease-ms -x -d 'Broker lease in milliseconds'
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l admin-token-file -r -F -d "The operators' bearer token file"
complete -c felix-broker -n "__fish_seen_subcommand_from control-plane" -l broker-token-file -r -F -d "The brokers' bearer token file"

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
