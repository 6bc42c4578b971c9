import HomeportStorage

/// An account's second factors as a sign-in sees them: TOTP, passkeys and the recovery codes
/// that stand in for them. A passkey is a second factor even where the server has no relying
/// party to ask for it (its public address became an IP address): the sign-in then takes a
/// recovery code.
struct SecondFactors {
    let db: any SQLExecutor
    /// Whether the server can ask for a passkey (it has a relying party).
    var asksForPasskeys = true

    /// Whether a password (or identity provider) sign-in to the account waits for a second
    /// factor: it has TOTP or a passkey.
    func any(userID: Int64) throws -> Bool {
        try AuthenticatorStore(db).hasTOTP(userID: userID) || PasskeyStore(db).exists(userID: userID)
    }

    /// The factors such a sign-in takes, by name (`recovery_codes`, `totp`, `webauthn`), as
    /// allauth's flows list them.
    func types(userID: Int64) throws -> [String] {
        var types = try AuthenticatorStore(db).all(userID: userID).map(\.type)
        if asksForPasskeys, try PasskeyStore(db).exists(userID: userID) { types.append("webauthn") }
        return types.sorted()
    }

    /// Removes the account's recovery codes once nothing is left for them to stand in for (its
    /// TOTP turned off, its last passkey removed): call it in the same transaction.
    func removeRecoveryCodesLeftAlone(userID: Int64) throws {
        if try !any(userID: userID) { try AuthenticatorStore(db).deleteAll(userID: userID) }
    }
}
