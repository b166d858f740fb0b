/* control-plane/adopt.h — `felixctl stream adopt` (control-plane/adopt.c). */
#ifndef FELIX_CP_ADOPT_H
#define FELIX_CP_ADOPT_H

#include "state.h"

/* 201 with *adopted; 404 no live copy listed; 409 the name exists, the
 * copies name several uuids, or the uuid is known or deleted; 422 the copies
 * disagree or say nothing of the stream, or too few live brokers. uuid NULL:
 * whichever one the copies name. Caller holds mu. */
void cp_stream_adopt(cp_state *cp, const char *name, const char *uuid, cp_stream_row *adopted, cp_outcome *out);

#endif
