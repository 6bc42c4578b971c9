#include <libpq-fe.h>

/// The SQLSTATE of a failed result (`PG_DIAG_SQLSTATE` is a character macro).
static inline const char *homeport_pq_sqlstate(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}
