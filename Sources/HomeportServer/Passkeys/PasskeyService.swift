import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWebAuthn
import HomeportWire

/// Passkeys and security keys (WebAuthn), as django-allauth's MFA app serves them: an account
/// adds them (after confirming its password or second factor, as for any factor), names,
/// renames and removes them, and signs in with one alone. The relying party is `--public-url`'s
/// host; without a public HTTPS address (or `http://localhost`) there are none. A sign-in with a
/// passkey meets the same approval stages, address verification and budgets as a password's.
package struct PasskeyService {
    let accounts: AccountService

    /// How long a challenge waits for its answer, in seconds.
    package static let challengeLifetime: Int64 = 300
    /// The most passkeys one account holds.
    package static let maximumPerAccount = 20
    /// The longest name.
    package static let maximumNameLength = 100

    /// The relying party, or `nil` when the public address cannot be one.
    package var relyingParty: RelyingParty? { accounts.settings.relyingParty }

    private var database: any Database { accounts.database }
    private var clock: any WallClock { accounts.clock }

    static func owner(_ session: Session) -> String { "session:" + session.keyHash }

    /// The algorithms offered, most preferred first.
    static var parameters: [[String: Any]] {
        COSEKey.Algorithm.allCases.map { ["type": "public-key", "alg": Int($0.rawValue)] }
    }

    private func challenge() throws -> [UInt8] {
        try accounts.random.bytes(32)
    }

    // MARK: Adding

    /// `navigator.credentials.create` options for `account` to add a passkey through `session`
    /// (`passwordless`: one that signs in alone, so discoverable and verified; otherwise a key
    /// that may serve only as a second factor, as allauth's); the challenge is kept for the
    /// session. `nil` without a relying party.
    package func creationOptions(session: Session, account: Account, passwordless: Bool) throws -> [String: Any]? {
        guard let party = relyingParty else { return nil }
        let bytes = try challenge()
        let now = clock.unixSeconds
        let existing = try PasskeyStore(database).all(userID: account.id)
        try database.transaction { db in
            let store = PasskeyStore(db)
            try store.sweep(now: now)
            try store.issue(
                .init(
                    purpose: passwordless ? "register-passwordless" : "register", challenge: bytes, userID: account.id),
                owner: Self.owner(session), expiresAt: now + Self.challengeLifetime)
        }
        return [
            "publicKey": [
                "rp": ["id": party.id, "name": party.id],
                "user": [
                    "id": IdentityProof.base64URL(Array(String(account.id).utf8)), "name": account.email,
                    "displayName": account.email,
                ],
                "challenge": IdentityProof.base64URL(bytes), "pubKeyCredParams": Self.parameters,
                "excludeCredentials": existing.map { ["type": "public-key", "id": $0.credentialID] },
                "authenticatorSelection": [
                    "residentKey": passwordless ? "required" : "discouraged", "requireResidentKey": passwordless,
                    "userVerification": passwordless ? "required" : "preferred",
                ],
                "extensions": ["credProps": true],
            ] as [String: Any]
        ]
    }

    /// What adding a passkey came to.
    package enum Addition: Sendable {
        /// Added; `recoveryCodes` when the account's recovery codes were made with it (its
        /// first second factor, on a server with a secrets key), to be shown once.
        case added(Passkey, recoveryCodes: Bool)
        /// Not an answer to the challenge this session holds (or none waits, or it expired, or
        /// the credential is registered already): allauth's `incorrect_code`.
        case incorrect
        /// The session must confirm the password or a second factor first.
        case reauthenticationRequired
        /// The account holds ``maximumPerAccount`` already.
        case tooMany
        /// No relying party.
        case unavailable
    }

    /// Adds the passkey `credential` (the browser's JSON) answers the challenge of `session`
    /// with, named `name` (or a name of its own), once the session confirmed itself within the
    /// last five minutes.
    package func add(name rawName: String?, credential: Any, session: Session, account: Account) throws -> Addition {
        guard let party = relyingParty else { return .unavailable }
        guard try accounts.twoFactor.recentlyReauthenticated(session) else { return .reauthenticationRequired }
        let existing = try PasskeyStore(database).all(userID: account.id)
        guard existing.count < Self.maximumPerAccount else { return .tooMany }
        guard
            let (registration, purpose, discoverable) = try register(
                credential, owner: Self.owner(session), purposes: ["register", "register-passwordless"],
                account: account, party: party)
        else { return .incorrect }
        // Asked for as one, or made discoverable and verified all the same (the credProps
        // extension says so): it signs in alone.
        let passwordless =
            purpose == "register-passwordless" || (discoverable == true && registration.userVerified)
        let name = Self.name(rawName, existing: existing.count)
        guard
            let passkey = try database.transaction({
                try PasskeyStore($0).insert(
                    userID: account.id, credentialID: IdentityProof.base64URL(registration.credentialID),
                    publicKey: IdentityProof.base64URL(registration.publicKey.encoded),
                    signCount: Int64(registration.signCount), name: name, passwordless: passwordless,
                    at: clock.now().timeIntervalSince1970)
            })
        else { return .incorrect }
        accounts.logger.notice(
            "passkey added",
            metadata: [
                "account": String(account.id), "passkey": String(passkey.id),
                "algorithm": String(registration.publicKey.algorithm.rawValue), "passwordless": String(passwordless),
            ])
        return .added(passkey, recoveryCodes: try accounts.twoFactor.ensureRecoveryCodes(userID: account.id))
    }

    /// The registration `credential` (the browser's JSON) answers the challenge `owner` keeps for
    /// one of `purposes` (taken once, whatever comes of it) for `account`, checked by `party`,
    /// with the person verified for a passkey that signs in alone (`register-passwordless`);
    /// with the purpose it was for and whether the authenticator says it is discoverable. `nil`
    /// for every refusal, logged.
    func register(_ credential: Any, owner: String, purposes: [String], account: Account, party: RelyingParty)
        throws -> (registration: RelyingParty.Registration, purpose: String, discoverable: Bool?)?
    {
        let now = clock.unixSeconds
        guard
            let waiting = try database.transaction({
                try PasskeyStore($0).take(owner: owner, purposes: purposes, now: now)
            }), waiting.userID == account.id
        else { return nil }
        do {
            let parsed = try RegistrationCredential(json: credential)
            let registration = try party.verifyRegistration(
                clientDataJSON: parsed.clientDataJSON, attestationObject: parsed.attestationObject,
                challenge: waiting.challenge, requireUserVerification: waiting.purpose == "register-passwordless")
            return (registration, waiting.purpose, parsed.discoverable)
        } catch let refusal as WebAuthnError {
            accounts.logger.notice(
                "passkey refused", metadata: ["account": String(account.id), "reason": refusal.description])
            return nil
        }
    }

    /// `raw` trimmed and cut to ``maximumNameLength``, or allauth's names when it is empty: the
    /// first key, a backup, then numbered.
    static func name(_ raw: String?, existing: Int) -> String {
        let trimmed = (raw ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            .filter { !$0.unicodeScalars.contains { $0.properties.generalCategory == .control } }
        if !trimmed.isEmpty { return String(trimmed.prefix(maximumNameLength)) }
        switch existing {
        case 0: return "Master key"
        case 1: return "Backup key"
        default: return "Key nr. \(existing + 1)"
        }
    }

    // MARK: Managing

    /// The account's passkeys, oldest first.
    package func passkeys(userID: Int64) throws -> [Passkey] {
        try PasskeyStore(database).all(userID: userID)
    }

    /// Renames the account's passkey `id`; false when it has none with this id.
    package func rename(id: Int64, to name: String, account: Account) throws -> Bool {
        try database.transaction { try PasskeyStore($0).rename(id: id, userID: account.id, to: name) }
    }

    /// What removing passkeys came to.
    package enum Removal: Sendable {
        /// Removed (how many).
        case removed(Int)
        /// The session must confirm itself first.
        case reauthenticationRequired
    }

    /// Removes the account's passkeys `ids`, once the session confirmed itself.
    package func remove(ids: [Int64], session: Session, account: Account) throws -> Removal {
        guard try accounts.twoFactor.recentlyReauthenticated(session) else { return .reauthenticationRequired }
        let removed = try database.transaction { db in
            let removed = try PasskeyStore(db).remove(ids: ids, userID: account.id)
            try SecondFactors(db: db).removeRecoveryCodesLeftAlone(userID: account.id)
            return removed
        }
        accounts.logger.notice(
            "passkeys removed", metadata: ["account": String(account.id), "count": String(removed)])
        return .removed(removed)
    }
}
