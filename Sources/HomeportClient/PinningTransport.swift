import Foundation
import HomeportWire
import Synchronization

/// The client's transport with installation keys pinned: a request to an address that an
/// enrolled server with a key lists (its primary or an alternative) carries that key's digest
/// (``ClientRequest/pinnedKeySHA256``), so the address may serve HTTPS with the certificate the
/// server makes from the key, with no certificate authority. An address two enrolled servers with
/// different keys list gets no pin (the system's trust alone).
///
/// An address no enrolled server lists, paired in this process (``HomeportClient/pair(_:allowHTTP:)``),
/// carries the paired key's digest: the first contact with a server is checked too. A pairing never
/// changes what an enrolled server's addresses accept.
struct PinningTransport: ClientTransport {
    let base: any ClientTransport
    let directory: ServerDirectory
    let pairings: Pairings

    func send(_ request: ClientRequest) async throws -> ClientResponse {
        try await base.send(pinned(request))
    }

    func open(_ request: ClientRequest) async throws -> ClientStream {
        try await base.open(pinned(request))
    }

    /// `request` with the pin its address has, unless it carries one already.
    func pinned(_ request: ClientRequest) -> ClientRequest {
        guard request.pinnedKeySHA256 == nil, request.url.scheme?.lowercased() == "https",
            let origin = ServerAddress.origin(of: request.url)
        else { return request }
        var request = request
        let listing = directory.records(listing: origin)
        if listing.isEmpty {
            request.pinnedKeySHA256 = pairings.link(for: origin)?.keyDigest
            return request
        }
        let keys = Set(listing.map { $0.publicKey.flatMap(InstallationKeyCheck.digest) })
        if keys.count == 1, let only = keys.first, let digest = only { request.pinnedKeySHA256 = digest }
        return request
    }
}

/// The pairing links this client checked, by the origin of their address: a sign-in there pins
/// the paired key, and enrols only the paired installation.
final class Pairings: Sendable {
    private let links = Mutex<[String: PairingLink]>([:])

    /// The link paired for `origin`, if any.
    func link(for origin: String) -> PairingLink? { links.withLock { $0[origin] } }

    /// Remembers `link` for `origin`.
    func add(_ link: PairingLink, origin: String) { links.withLock { $0[origin] = link } }
}

extension ServerDirectory {
    /// The enrolled servers that list an address of `origin`, as primary or alternative.
    func records(listing origin: String) -> [ServerRecord] {
        all.filter { record in
            record.primary.origin == origin || record.alternatives.contains { $0.address.origin == origin }
        }
    }
}
