#ifndef OFFLINESTORE_CLIBPQ_SHIM_H
#define OFFLINESTORE_CLIBPQ_SHIM_H

// Debian's libpq-dev installs its headers under /usr/include/postgresql; libpq-fe.h includes
// its siblings with quotes, so naming the folder here needs no extra search path.
#include <postgresql/libpq-fe.h>

// The PG_DIAG_* field codes are character-literal macros, which Swift does not import.
// libpq API: https://www.postgresql.org/docs/15/libpq-exec.html#LIBPQ-PQRESULTERRORFIELD

/// The SQLSTATE code of an error result (five characters), or NULL.
static inline const char *cpq_result_sqlstate(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}

/// The primary human-readable message of an error result, without the severity prefix, or NULL.
static inline const char *cpq_result_primary_message(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
}

/// The detail message of an error result, or NULL.
static inline const char *cpq_result_detail(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL);
}

#endif
