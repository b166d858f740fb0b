/* programs.h — the subcommands of felix-broker, each in its own files. */
#ifndef FELIX_BROKER_PROGRAMS_H
#define FELIX_BROKER_PROGRAMS_H

/* felix-broker control-plane ... (control-plane/). argv[0] is "control-plane". */
int cp_main(int argc, char **argv);
/* felix-broker run ... (broker/). argv[0] is "run". */
int broker_main(int argc, char **argv);
/* felix-broker restore-point ... (restore-point/). argv[0] is "restore-point". */
int rp_main(int argc, char **argv);

#endif
