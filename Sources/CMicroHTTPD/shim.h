#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

// Swift cannot call C variadic functions, so the few MHD entry points that take
// `...` are wrapped here with fixed arguments.

/// Starts a daemon on an already listening socket with the limits Homeport sets.
static inline struct MHD_Daemon *homeport_mhd_start(
    unsigned int flags,
    int listen_socket,
    unsigned int thread_pool_size,
    unsigned int connection_timeout_seconds,
    size_t connection_memory_limit,
    unsigned int connection_limit,
    MHD_AccessHandlerCallback handler,
    void *handler_context,
    MHD_RequestCompletedCallback completed,
    void *completed_context)
{
    if (thread_pool_size > 1) {
        return MHD_start_daemon(
            flags, 0, NULL, NULL, handler, handler_context,
            MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_socket,
            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
            MHD_OPTION_END);
    }
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, handler_context,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_socket,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_END);
}

/// The peer address of a connection, or NULL.
static inline const struct sockaddr *homeport_mhd_client_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
