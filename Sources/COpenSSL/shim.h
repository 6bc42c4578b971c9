#include <errno.h>
#include <sys/socket.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/// `EVP_PKEY_EC` is a macro over another macro; Swift sees neither.
static inline int homeport_evp_pkey_ec(void) { return EVP_PKEY_EC; }

/// Server Name Indication (a macro over SSL_ctrl in OpenSSL).
static inline long homeport_ssl_set_sni(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

/// The lowest TLS version a context accepts (a macro over SSL_CTX_ctrl).
static inline long homeport_ssl_ctx_min_tls12(SSL_CTX *context) {
    return SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

/// Lets SSL_write return after each record on a non-blocking socket, and be called again with the
/// rest of the buffer wherever it now lives (macros over SSL_ctrl).
static inline long homeport_ssl_partial_writes(SSL *ssl) {
    return SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

#ifdef MSG_NOSIGNAL
/// A socket BIO's write with MSG_NOSIGNAL: to a peer that closed its end, the write fails with
/// EPIPE instead of raising SIGPIPE, whose default action ends the whole process. OpenSSL's own
/// socket BIO writes with write(2).
static inline int homeport_bio_send(BIO *bio, const char *data, int length) {
    int descriptor = -1;
    BIO_get_fd(bio, &descriptor);
    errno = 0;
    ssize_t written = send(descriptor, data, (size_t)length, MSG_NOSIGNAL);
    BIO_clear_retry_flags(bio);
    if (written <= 0 && BIO_sock_should_retry((int)written)) BIO_set_retry_write(bio);
    return (int)written;
}
#endif

/// OpenSSL's socket BIO with writes that never raise SIGPIPE (where the system has MSG_NOSIGNAL,
/// as Linux does). Made once per process and never freed; NULL when OpenSSL could not make it.
static inline BIO_METHOD *homeport_bio_socket_method(void) {
    const BIO_METHOD *socket = BIO_s_socket();
    BIO_METHOD *method = BIO_meth_new(BIO_TYPE_SOCKET, "socket without SIGPIPE");
    if (method == NULL) return NULL;
#ifdef MSG_NOSIGNAL
    BIO_meth_set_write(method, homeport_bio_send);
#else
    BIO_meth_set_write(method, BIO_meth_get_write(socket));
#endif
    BIO_meth_set_read(method, BIO_meth_get_read(socket));
    BIO_meth_set_puts(method, BIO_meth_get_puts(socket));
    BIO_meth_set_ctrl(method, BIO_meth_get_ctrl(socket));
    BIO_meth_set_create(method, BIO_meth_get_create(socket));
    BIO_meth_set_destroy(method, BIO_meth_get_destroy(socket));
    return method;
}

/// Gives `ssl` the socket `descriptor` (closed by its owner, never by OpenSSL) through one BIO of
/// `method` for reading and writing; 0 when OpenSSL could not make the BIO.
static inline int homeport_ssl_set_socket(SSL *ssl, BIO_METHOD *method, int descriptor) {
    BIO *bio = BIO_new(method);
    if (bio == NULL) return 0;
    BIO_set_fd(bio, descriptor, BIO_NOCLOSE);
    SSL_set_bio(ssl, bio, bio);
    return 1;
}
