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
                let context = try make(caFile: caFile, holding: file)
                contexts[key] = (file, context)
                return context
            }
        }

        /// A context trusting the system's CAs and the certificates of `file` (the CA file's bytes
        /// as read for the key: the file is not opened again, so a context never holds other
        /// bytes than those it is kept for).
        private static func make(caFile: String?, holding file: Data) throws -> Context {
            guard let pointer = SSL_CTX_new(TLS_client_method()) else {
                throw APNsConnectionError("OpenSSL could not make a TLS context")
            }
            let context = Context(pointer: pointer)
            _ = homeport_ssl_ctx_min_tls12(pointer)
            SSL_CTX_set_verify(pointer, SSL_VERIFY_PEER, nil)
            _ = SSL_CTX_set_default_verify_paths(pointer)
            if let caFile, addCertificates(in: file, to: pointer) == 0 {
                throw APNsConnectionError("cannot load the CA file \(caFile)")
            }
            return context
        }

        /// Adds each PEM certificate of `pem` (`CERTIFICATE` or `TRUSTED CERTIFICATE` blocks, as
        /// OpenSSL's own loading of a CA file reads) to the context's trust; how many, or 0 when
        /// any of them could not be read or added (a damaged bundle is refused whole, as before).
        private static func addCertificates(in pem: Data, to context: OpaquePointer) -> Int {
            guard let store = SSL_CTX_get_cert_store(context) else { return 0 }
            let text = String(decoding: pem, as: UTF8.self)
            let blocks =
                text.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1
                + text.components(separatedBy: "-----BEGIN TRUSTED CERTIFICATE-----").count - 1
            var added = 0
            pem.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress, let bio = BIO_new_mem_buf(base, Int32(bytes.count)) else {
                    return
                }
                defer { BIO_free(bio) }
                while let certificate = PEM_read_bio_X509_AUX(bio, nil, nil, nil) {
                    if X509_STORE_add_cert(store, certificate) == 1 { added += 1 }
                    X509_free(certificate)
                }
            }
            // The end of the text leaves "no start line" on the thread's error queue.
            ERR_clear_error()
            return added == blocks ? added : 0
        }
    }
}
