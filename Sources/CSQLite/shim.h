#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a macro Swift cannot import: SQLite copies the bound value.
static inline sqlite3_destructor_type homeport_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// Turns off SQLite's global memory statistics (a process-wide mutex taken on every allocation).
/// Must run before SQLite is first used; returns SQLITE_OK or SQLITE_MISUSE if it ran too late.
static inline int homeport_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
