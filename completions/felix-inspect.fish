# fish completion for felix-inspect(1): subcommands, --json/--help/--version,
# dump's --from/--limit/--payload (text hex none), directories for DATADIR and
# SHARDDIR, files for SEGMENT and INDEX.

set -l __felix_inspect_subcommands storage-id run-state segments dump index verify ballot

complete -c felix-inspect -f

# Global options.
complete -c felix-inspect -l json -d 'Machine-readable output (JSON)'
complete -c felix-inspect -s h -l help -d 'Print the usage'
complete -c felix-inspect -l version -d 'Print the version'

# Subcommands, before one is given.
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a storage-id -d "Print the data directory's storage id"
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a run-state -d 'Print the last run and the next-start identity verdict'
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a segments -d "List a shard's segments"
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a dump -d 'Print the records of one segment file'
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a index -d 'Print and check one sparse index file'
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a verify -d 'Check every file; exit 6 when anything is damaged'
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a ballot -d "Print a shard copy's ballot and generations"
# The summary takes a DATADIR.
complete -c felix-inspect -n "not __fish_seen_subcommand_from $__felix_inspect_subcommands" -a '(__fish_complete_directories)'

# Directory arguments.
complete -c felix-inspect -n "__fish_seen_subcommand_from storage-id run-state segments verify ballot" -a '(__fish_complete_directories)'

# File arguments.
complete -c felix-inspect -n "__fish_seen_subcommand_from dump index" -F

# dump's options.
complete -c felix-inspect -n "__fish_seen_subcommand_from dump" -l from -x -d 'Start at this record offset'
complete -c felix-inspect -n "__fish_seen_subcommand_from dump" -l limit -x -d 'Print at most N records'
complete -c felix-inspect -n "__fish_seen_subcommand_from dump" -l payload -x -a 'text hex none' -d 'Payload as text, hex or none'
