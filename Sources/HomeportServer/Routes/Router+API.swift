import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportWire
import Synchronization

extension Router where Context == RequestContext {
    /// Declares the API prefix `/api/v1` and adds its authenticated routes.
    ///
    /// Every route under the prefix passes through `no-store`, the session reader (header only:
    /// a session cookie is never read here, so a browser session cannot call the API and there
    /// is nothing for another site to ride on, hence no CSRF check) and the signed-in check.
    /// The two exceptions are groups of their own: the public identity route and standing.
    mutating func addAPI(
        reader: SessionReader, identity: IdentityStore, product: String, invitations: InvitationPolicy = .admins,
        version: String, features: [String] = AppInfoEndpoint.features, logger: Logger
    ) {
        let session = SessionMiddleware(reader: reader, credential: .header)
        group(HomeportPath.apiPrefix, middleware: [NoStoreMiddleware(), session, RequireSignedIn()])
        group(HomeportPath.authStanding, middleware: [NoStoreMiddleware(), session]) { standing in
            // The one API route that answers the pre-login token; a stranger gets the same 200 as nobody.
            standing.get("") { _, context in
                try .json(StandingAnswer(standing: context.caller.session?.standing))
            }
        }
        let appInfo = AppInfoEndpoint(
            identity: identity, product: product, version: version, features: features, logger: logger)
        get(HomeportPath.appInfo) { _, _ in appInfo.response() }
        get(HomeportPath.account) { _, context in
            guard case .signedIn(_, let account) = context.caller else { throw RequireSignedIn.refusal }
            return try .json(
                AccountAnswer(
                    id: account.id, email: account.email, emailVerified: account.emailVerified ?? false,
                    groups: account.groups ?? [], stage: account.approval.rawValue,
                    canInvite: invitations.allows(account)))
        }
        addForwardAuth()
    }
}

/// `GET /api/v1/app-info`: the same body for every signed-in caller, encoded once the identity is known.
final class AppInfoEndpoint: Sendable {
    /// Every capability this server offers.
    static let features = [
        Feature.serverConnectionIdentity, Feature.sessionToken, Feature.pushServerID, Feature.notificationsStream,
    ]

    private let identity: IdentityStore
    private let product: String
    private let version: String
    private let features: [String]
    private let logger: Logger
    /// The body, encoded once per identifier (a replica may see a reset and answer a new one).
    private let cached = Mutex<(id: InstanceID, bytes: Data)?>(nil)

    init(identity: IdentityStore, product: String, version: String, features: [String], logger: Logger) {
        self.identity = identity
        self.product = product
        self.version = version
        self.features = features
        self.logger = logger.withLabel("homeport.identity")
    }

    func response() -> HTTPResponse {
        .json(bytes: body())
    }

    private func body() -> Data {
        let id: InstanceID?
        do {
            id = try identity.instanceID()
        } catch {
            // Feature detection must not fail because of identity: answer without instanceId.
            logger.warning("app-info without instanceId", metadata: ["error": String(describing: error)])
            id = nil
        }
        if let id, let known = cached.withLock({ $0 }), known.id == id { return known.bytes }
        let info = AppInfo(product: product, version: version, features: features, instanceId: id)
        let bytes = (try? HTTPResponse.encode(info)) ?? Data("{}".utf8)
        if let id { cached.withLock { $0 = (id, bytes) } }
        return bytes
    }
}
