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
