#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/eventfd.h>
#endif
#include <microhttpd.h>

// Swift cannot call C variadic functions, so the few MHD entry points that take
// `...` are wrapped here with fixed arguments.

/// Starts a daemon on an already listening socket with the limits Homeport sets.
///
/// `accept_policy` may refuse a connection before any byte is read (a per-address cap);
/// `notify_connection` hears of every connection's start and end (deadlines); `uri_log` sees each
/// request target before libmicrohttpd parses its query, and its result becomes the request's
/// context; strict mode refuses HTTP/1.1 requests without `Host` and request lines with spaces in
/// the target. With `tls_certificate` and `tls_key` (PEM text), the daemon speaks HTTPS (GnuTLS).
/// NULL when the daemon cannot start.
static inline struct MHD_Daemon *homeport_mhd_start(
    unsigned int flags,
    int listen_socket,
    unsigned int thread_pool_size,
    unsigned int connection_timeout_seconds,
    size_t connection_memory_limit,
    unsigned int connection_limit,
    MHD_AcceptPolicyCallback accept_policy,
    MHD_AccessHandlerCallback handler,
    MHD_RequestCompletedCallback completed,
    MHD_NotifyConnectionCallback notify_connection,
    void *(*uri_log)(void *context, const char *uri, struct MHD_Connection *connection),
    const char *tls_certificate,
    const char *tls_key,
    const char *tls_priorities,
    void *context)
{
    struct MHD_OptionItem options[14];
    int count = 0;
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_LISTEN_SOCKET, (intptr_t) listen_socket, NULL };
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t) connection_timeout_seconds, NULL };
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t) connection_memory_limit, NULL };
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_CONNECTION_LIMIT, (intptr_t) connection_limit, NULL };
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t) completed, context };
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t) notify_connection, context };
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t) uri_log, context };
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL };
    if (thread_pool_size > 1)
        options[count++] = (struct MHD_OptionItem) { MHD_OPTION_THREAD_POOL_SIZE, (intptr_t) thread_pool_size, NULL };
    if (tls_certificate != NULL && tls_key != NULL) {
        flags |= MHD_USE_TLS;
        options[count++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *) tls_certificate };
        options[count++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *) tls_key };
        if (tls_priorities != NULL)
            options[count++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_PRIORITIES, 0, (void *) tls_priorities };
    }
    options[count++] = (struct MHD_OptionItem) { MHD_OPTION_END, 0, NULL };
    return MHD_start_daemon(
        flags, 0, accept_policy, context, handler, context,
        MHD_OPTION_ARRAY, options,
        MHD_OPTION_END);
}

/// Whether this libmicrohttpd was built with TLS (Debian's links GnuTLS).
static inline int homeport_mhd_has_tls(void)
{
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

/// Connections a daemon holds open right now, or -1.
static inline int homeport_mhd_connection_count(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? -1 : (int) info->num_connections;
}

/// The socket of a connection, or -1.
static inline int homeport_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int) info->connect_fd;
}

/// What the notify-connection callback stored for a connection, or NULL.
static inline void *homeport_mhd_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// The peer address of a connection, or NULL.
static inline const struct sockaddr *homeport_mhd_client_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// Takes the listening socket `listen_fd` from the daemon it was given to, without
/// MHD_quiesce_daemon: `listen_fd` is made to name an eventfd (never readable, so a worker that
/// still tries to accept is refused with ENOTSOCK, and libmicrohttpd closes it at its stop), and a
/// new descriptor of the listening socket is returned, which the caller owns. Once the caller
/// closes it, and no other descriptor names the socket, the kernel takes it out of every worker's
/// epoll set. -1, with `listen_fd` unchanged, when it cannot be done (or off Linux).
static inline int homeport_mhd_take_listen_socket(int listen_fd)
{
#ifdef __linux__
    int kept = fcntl(listen_fd, F_DUPFD_CLOEXEC, 0);
    if (kept < 0) return -1;
    int placeholder = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (placeholder < 0) {
        close(kept);
        return -1;
    }
    int swapped;
    // dup2 is EBUSY while another thread is between allocating and installing that number.
    do {
        swapped = dup2(placeholder, listen_fd);
    } while (swapped < 0 && (errno == EINTR || errno == EBUSY));
    close(placeholder);
    if (swapped < 0) {
        close(kept);
        return -1;
    }
    (void) fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
    return kept;
#else
    (void) listen_fd;
    return -1;
#endif
}
