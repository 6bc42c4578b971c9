import Foundation
import HomeportWire

extension HomeportClient {
    /// Checks a pairing link (the QR code of the server's web account page) before any credential
    /// goes to its address: the address must answer the identity probe as the link's installation
    /// and prove, for a fresh challenge, the key whose fingerprint the link shows. Over HTTPS, a
    /// certificate made from that key is accepted with no certificate authority.
    ///
    /// Once paired, a sign-in at that address (``login(pairing:email:password:allowHTTP:)``, or
    /// ``login(at:email:password:)`` with the returned address) carries the pin too, and enrols
    /// only the paired installation with the paired key: anything else ends the new session and
    /// keeps nothing. Throws ``ClientError/probeFailed(address:outcome:)`` with nothing sent when
    /// the address is not the paired installation; a plain `http` address needs `allowHTTP`.
    @discardableResult
    public func pair(_ link: PairingLink, allowHTTP: Bool = false) async throws -> ServerAddress {
        let address = try ServerAddress(parsing: link.url, allowHTTP: allowHTTP)
        // A link cannot re-key an address this device already knows as another installation's.
        for record in directory.records(listing: address.origin)
        where record.instanceID != link.instanceID
            || record.publicKey.map({ InstallationKeyCheck.digest($0) != link.keyDigest }) == true
        {
            throw ClientError.probeFailed(
                address: address.url,
                outcome: "it is an address of \(record.displayName), enrolled with another id or key than the link's")
        }
        let outcome = await probe.probe(address, expected: nil, pin: link.keyDigest)
        let refusal: String? =
            switch outcome {
            case .match(let identity) where identity.instanceId != link.instanceID:
                "it answered as another installation (id \(identity.instanceId))"
            case .match(let identity):
                identity.publicKey.flatMap(InstallationKeyCheck.digest) == link.keyDigest
                    ? nil : "it did not prove the key \(link.keyFingerprint) the pairing link shows"
            default: outcome.description
            }
        if let refusal { throw ClientError.probeFailed(address: address.url, outcome: refusal) }
        pairings.add(link, origin: address.origin)
        return address
    }

    /// Pairs with `link` (``pair(_:allowHTTP:)``), then signs in at its address as
    /// ``login(at:email:password:)`` does: the password goes only to the paired installation.
    public func login(pairing link: PairingLink, email: String, password: String, allowHTTP: Bool = false)
        async throws -> SignInResult
    {
        let address = try await pair(link, allowHTTP: allowHTTP)
        return try await login(at: address, email: email, password: password)
    }

    /// Refuses to enrol at a paired `address` anything but the paired installation and key.
    func checkPairing(at address: ServerAddress, instanceID: InstanceID?, publicKey: String?) throws {
        guard let link = pairings.link(for: address.origin) else { return }
        guard instanceID == link.instanceID, publicKey.flatMap(InstallationKeyCheck.digest) == link.keyDigest else {
            throw ClientError.probeFailed(
                address: address.url,
                outcome: "it did not prove the paired installation \(link.instanceID) and key \(link.keyFingerprint)")
        }
    }
}
