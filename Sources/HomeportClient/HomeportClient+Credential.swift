import Foundation
import HomeportWire

extension HomeportClient {
    /// Where a session token may go, and on what grounds.
    enum CredentialTarget {
        /// An address chosen for an enrolled server on this network path (``choose(for:excluding:matchOnly:)``).
        /// `alternativeMatched` says whether an alternative answered as the installation earlier in
        /// the same command: then the primary's standing trust is out of that command.
        case chosen(Choice, alternativeMatched: Bool)
        /// The address that issued this very token moments ago, in this command (a sign-in's new
        /// session or pre-login token, before the server is enrolled): it goes back only there.
        case issuer(ServerAddress)

        var address: ServerAddress {
            switch self {
            case .chosen(let choice, _): choice.address
            case .issuer(let address): address
            }
        }
    }

    /// The one place a session token joins a request: `request` with `token` as the
    /// session-token header, for `target`. Refuses, with nothing sent, a request whose URL is not
    /// the target's origin, and the primary's standing trust in a command in which an
    /// alternative answered as the installation.
    func credentialed(_ request: ClientRequest, token: String, for target: CredentialTarget) throws -> ClientRequest {
        let address = target.address
        guard ServerAddress.origin(of: request.url) == address.origin else {
            throw ClientError.invalidAddress(ServerText.clean(request.url.absoluteString, limit: 120))
        }
        if case .chosen(let choice, let alternativeMatched) = target, alternativeMatched, !choice.speaksForServer {
            throw ClientError.noVerifiedAddress(
                server: address.url,
                detail: "an alternative answered as the installation in this command, and \(address.url), "
                    + "which did not, gets no credential; nothing was sent")
        }
        var request = request
        request.headers[HomeportHeader.sessionToken] = token
        return request
    }
}
