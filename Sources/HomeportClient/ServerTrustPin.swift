#if canImport(Security)
    import CryptoKit
    import Foundation
    import Security

    /// URLSession's half of ``ClientRequest/pinnedKeySHA256``: a server-trust challenge whose
    /// certificate holds the pinned installation key is accepted; any other is left to the
    /// system's trust (``disposition(_:pin:)`` answers `nil`).
    enum ServerTrustPin {
        /// `.useCredential` with the server's trust when `challenge` is a server-trust challenge
        /// whose leaf certificate's installation key (P-256 or Ed25519) hashes to `pin`; `nil`
        /// otherwise.
        static func disposition(_ challenge: URLAuthenticationChallenge, pin: [UInt8]?)
            -> (URLSession.AuthChallengeDisposition, URLCredential?)?
        {
            guard let pin, challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
                let trust = challenge.protectionSpace.serverTrust,
                let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate], let leaf = chain.first,
                let key = CertificateKey.installationKey(certificateDER: Array(SecCertificateCopyData(leaf) as Data)),
                Array(SHA256.hash(data: key)) == pin
            else { return nil }
            return (.useCredential, URLCredential(trust: trust))
        }
    }
#endif
