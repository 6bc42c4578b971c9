import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportWire
import Synchronization

extension Router {
    /// The one error every refused API request gets: it never says whether the token expired,
    /// was signed out, never existed, or was missing (a cookie does not count).
    static let notAuthenticated = HTTPError(
        status: 401, code: "not_authenticated", message: "Sign in to use this route.")

    /// Adds the authenticated API routes: `GET /api/v1/app-info` and `GET /api/v1/auth/standing`.
    ///
    /// The API prefix reads the credential from `X-Session-Token` only. A session cookie is never
    /// read here, so a browser session cannot call the API and there is nothing for another
    /// site to ride on (hence no CSRF check).
    public mutating func addAPI(
        _ service: AccountService, identity: IdentityStore, product: String, version: String, logger: Logger
    ) {
        let appInfo = AppInfoEndpoint(identity: identity, product: product, version: version, logger: logger)
        get("/api/v1/app-info") { request in
            try Self.requireAppSession(request, service)
            return appInfo.response()
        }
        get("/api/v1/auth/standing") { request in
            // The one API route that answers the pre-login token; a stranger gets the same 200 as nobody.
            let standing = try service.standing(appToken: request.headers["X-Session-Token"])
            var response = try HTTPResponse.json(StandingAnswer(standing: standing))
            response.headers.set("Cache-Control", "no-store")
            return response
        }
    }

    /// Throws 401 unless `X-Session-Token` names a live, signed-in app session.
    static func requireAppSession(_ request: HTTPRequest, _ service: AccountService) throws {
        guard let token = request.headers["X-Session-Token"], try service.isSignedIn(appToken: token) else {
            throw notAuthenticated
        }
    }
}

/// `GET /api/v1/app-info`: the same body for every signed-in caller, encoded once the identity is known.
final class AppInfoEndpoint: Sendable {
    /// Every capability this server offers.
    static let features = [Feature.serverConnectionIdentity, Feature.sessionToken]

    private let identity: IdentityStore
    private let product: String
    private let version: String
    private let logger: Logger
    private let cached = Mutex<Data?>(nil)

    init(identity: IdentityStore, product: String, version: String, logger: Logger) {
        self.identity = identity
        self.product = product
        self.version = version
        self.logger = logger.withLabel("homeport.identity")
    }

    func response() -> HTTPResponse {
        var response = HTTPResponse.json(bytes: body())
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    private func body() -> Data {
        if let bytes = cached.withLock({ $0 }) { return bytes }
        let id: InstanceID?
        do {
            id = try identity.instanceID()
        } catch {
            // Feature detection must not fail because of identity: answer without instanceId.
            logger.warning("app-info without instanceId", metadata: ["error": String(describing: error)])
            id = nil
        }
        let info = AppInfo(product: product, version: version, features: Self.features, instanceId: id)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = (try? encoder.encode(info)) ?? Data("{}".utf8)
        if id != nil { cached.withLock { $0 = bytes } }
        return bytes
    }
}
