import COpenSSL
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension TLSConnection {
    /// A client TLS context: the system's trust plus an optional CA file, peers verified, TLS 1.2
    /// at least. Each connection's `SSL` holds it too (OpenSSL counts them), so one replaced here
    /// is freed when the last connection made from it ends.
    final class Context: @unchecked Sendable {
        let pointer: OpaquePointer
        let made: ContinuousClock.Instant

        private init(pointer: OpaquePointer) {
            self.pointer = pointer
            self.made = .now
        }

        deinit { SSL_CTX_free(pointer) }

        /// Contexts made, by the CA file, with the bytes it held (a file written again is
        /// another context; its bytes are compared, since a time or a size can stay the same).
        private static let contexts = Mutex<[String: (file: Data, context: Context)]>([:])

        /// How long a context is shared before the next connection makes a new one (and reads the
        /// system's trust again, which may have changed).
        static let lifetime = Duration.seconds(3600)

        /// The context for `caFile`: made once and shared by the connections after, because
        /// making one reads the whole system CA bundle (some 150 certificates, about 12 ms of CPU),
        /// for each of a gateway's threads. OpenSSL lets threads make connections from one context
        /// at once as long as nobody changes it, and nobody does once it is made.
        static func shared(caFile: String?) throws -> Context {
            let file: Data
            do {
                file = try caFile.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } ?? Data()
            } catch {
                throw APNsConnectionError("cannot load the CA file \(caFile ?? "")")
            }
            let key = caFile ?? ""
            return try contexts.withLock { contexts in
                if let made = contexts[key], made.file == file, ContinuousClock.now - made.context.made < lifetime {
                    return made.context
                }
                let context = try make(caFile: caFile)
                contexts[key] = (file, context)
                return context
            }
        }

        private static func make(caFile: String?) throws -> Context {
            guard let pointer = SSL_CTX_new(TLS_client_method()) else {
                throw APNsConnectionError("OpenSSL could not make a TLS context")
            }
            let context = Context(pointer: pointer)
            _ = homeport_ssl_ctx_min_tls12(pointer)
            SSL_CTX_set_verify(pointer, SSL_VERIFY_PEER, nil)
            _ = SSL_CTX_set_default_verify_paths(pointer)
            if let caFile, SSL_CTX_load_verify_locations(pointer, caFile, nil) != 1 {
                throw APNsConnectionError("cannot load the CA file \(caFile)")
            }
            return context
        }
    }
}
