import Foundation
import HomeportStorage

/// An OpenID Connect provider the operator configured (`homeport-server oidc add`): the
/// household's Authentik, Authelia, Keycloak or other identity provider.
package struct OIDCProvider: Sendable, Hashable {
    /// Its id here (`oidc add ID`): 1–64 of a-z 0-9 . _ -.
    package var id: String
    /// The name its button shows.
    package var name: String
    /// The issuer: its discovery document is at `ISSUER/.well-known/openid-configuration`.
    package var issuer: String
    /// This server's client id at the provider.
    package var clientID: String
    /// Where the client secret is read from when the server needs it; `nil` for a public client.
    /// The secret itself is never stored in the database.
    package var clientSecretFile: String?
    /// The client ids of the apps that run the provider's flow themselves and hand over an ID
    /// token: tokens for them are accepted beside tokens for ``clientID``.
    package var appClientIDs: [String]
    /// The scopes asked for.
    package var scopes: String
    /// Whether a first sign-in may join an existing account with the same address, when the
    /// provider says it verified it.
    package var linkVerifiedEmail: Bool

    /// The default scopes.
    package static let defaultScopes = "openid email profile"

    /// Every client id a token may be for.
    var audiences: Set<String> { Set([clientID] + appClientIDs) }

    /// The client id an app is told to use: the first app client id, else the server's own.
    var appClientID: String { appClientIDs.first ?? clientID }

    /// The discovery document's address.
    var discoveryURL: String {
        (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration"
    }

    /// Whether `id` is a valid provider id.
    package static func isValidID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || [0x2E, 0x5F, 0x2D].contains($0)
            }
    }

    /// What is wrong with `issuer` as an issuer, or `nil`: it is an absolute HTTPS URL without a
    /// query or fragment; plain HTTP only on a loopback host (tests, a provider on this machine).
    package static func issuerProblem(_ issuer: String) -> String? {
        guard let url = URLComponents(string: issuer), let scheme = url.scheme?.lowercased(),
            let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil,
            url.password == nil
        else { return "the issuer must be an absolute URL without a query, fragment or user" }
        switch scheme {
        case "https": return nil
        case "http" where isLoopback(host): return nil
        case "http": return "the issuer must use HTTPS (plain HTTP only on a loopback address)"
        default: return "the issuer must be an https:// URL"
        }
    }

    /// Whether `url` may be fetched for this provider: HTTPS, or plain HTTP on a loopback host
    /// when the issuer is one.
    func isFetchable(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else { return false }
        if scheme == "https" { return true }
        return scheme == "http" && Self.isLoopback(host) && issuer.lowercased().hasPrefix("http://")
    }

    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return ServeCommand.isLoopback(bare.lowercased())
    }
}

/// The `oidc_providers` table.
struct OIDCProviderStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Stores a new provider; false when the id is taken.
    func add(_ provider: OIDCProvider, now: Int64) throws -> Bool {
        !(try db.execute(
            """
            INSERT INTO oidc_providers (id, name, issuer, client_id, client_secret_file, app_client_ids, scopes,
                link_verified_email, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING RETURNING id
            """,
            [
                .text(provider.id), .text(provider.name), .text(provider.issuer), .text(provider.clientID),
                provider.clientSecretFile.map(SQLValue.text) ?? .null,
                .text(provider.appClientIDs.joined(separator: " ")), .text(provider.scopes),
                .integer(provider.linkVerifiedEmail ? 1 : 0), .integer(now),
            ]
        ).isEmpty)
    }

    /// Every provider, in the order they were added.
    func all() throws -> [OIDCProvider] {
        try db.execute(
            """
            SELECT id, name, issuer, client_id, client_secret_file, app_client_ids, scopes, link_verified_email
            FROM oidc_providers ORDER BY created_at, id
            """
        ).compactMap { row in
            guard let id = row.string("id"), let name = row.string("name"), let issuer = row.string("issuer"),
                let client = row.string("client_id")
            else { return nil }
            return OIDCProvider(
                id: id, name: name, issuer: issuer, clientID: client,
                clientSecretFile: row.string("client_secret_file"),
                appClientIDs: (row.string("app_client_ids") ?? "").split(separator: " ").map(String.init),
                scopes: row.string("scopes") ?? OIDCProvider.defaultScopes,
                linkVerifiedEmail: row.int("link_verified_email") == 1)
        }
    }

    /// Removes a provider; false when there is none with that id. Its links stay, so that adding
    /// it again brings its people back to their accounts.
    func remove(id: String) throws -> Bool {
        !(try db.execute("DELETE FROM oidc_providers WHERE id = $1 RETURNING id", [.text(id)]).isEmpty)
    }
}
