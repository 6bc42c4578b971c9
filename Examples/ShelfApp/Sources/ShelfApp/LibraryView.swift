import HomeportClient
import ShelfKit
import SwiftUI

/// The server shown: its books and notifications when signed in, the sign-in form when not.
struct LibraryView: View {
    let shelf: Shelf
    @State private var title = ""
    @State private var newAddress = ""
    @State private var addingAddress = false

    var body: some View {
        if let record = shelf.selected {
            if shelf.isSignedIn {
                books(of: record)
            } else {
                // A form of its own per server: another server's email is not this one's.
                SignInForm(shelf: shelf, record: record).id(record.localID)
            }
        } else {
            ContentUnavailableView(
                "No library", systemImage: "books.vertical",
                description: Text("Add your BookOrbit server with its address."))
        }
    }

    private func books(of record: ServerRecord) -> some View {
        List {
            Section {
                HStack {
                    TextField("Title", text: $title)
                    Button("Add") {
                        let added = title
                        title = ""
                        Task { await shelf.add(title: added) }
                    }
                    .disabled(title.trimmingCharacters(in: .whitespaces).isEmpty)
                }
            }
            Section("Books") {
                ForEach(shelf.books) { book in
                    HStack {
                        VStack(alignment: .leading) {
                            Text(book.title)
                            if let author = book.author { Text(author).font(.caption).foregroundStyle(.secondary) }
                        }
                        Spacer()
                        if let loan = book.loan {
                            Text(loan.state == "ready" ? "Ready" : "Preparing…").font(.caption)
                        } else {
                            Button("Borrow") { Task { await shelf.lend(book) } }
                        }
                    }
                }
            }
            if !shelf.feed.isEmpty {
                Section("Notifications") {
                    ForEach(shelf.feed, id: \.id) { notification in
                        VStack(alignment: .leading) {
                            Text(notification.title)
                            if let body = notification.body { Text(body).font(.caption) }
                        }
                    }
                }
            }
        }
        .navigationTitle(Shelf.name(of: record))
        .refreshable { await shelf.refresh() }
        .safeAreaInset(edge: .bottom) {
            // Failover made visible: the address that answered, and the stream's state.
            Text(
                [shelf.answeringAddress.map { "via \($0)" }, shelf.streamState].compactMap { $0 }.joined(
                    separator: " · ")
            )
            .font(.footnote).foregroundStyle(.secondary).padding(.bottom, 4)
        }
        .toolbar {
            Menu {
                Button("Add an address…") { addingAddress = true }
                Button("Sign out", role: .destructive) { Task { await shelf.signOut() } }
            } label: {
                Label("Library", systemImage: "server.rack")
            }
        }
        .alert("Another address of this library", isPresented: $addingAddress) {
            TextField("https://books.example.net", text: $newAddress)
            Button("Add") {
                let address = newAddress
                newAddress = ""
                Task { await shelf.addAddress(address) }
            }
            Button("Cancel", role: .cancel) {}
        } message: {
            Text("It is checked now: only an address that answers as this library is kept.")
        }
    }
}

/// Signing in again to a server kept on this phone.
struct SignInForm: View {
    let shelf: Shelf
    let record: ServerRecord
    @State private var email = ""
    @State private var password = ""

    var body: some View {
        Form {
            Section(Shelf.name(of: record)) {
                TextField("Email", text: $email)
                    .textContentType(.username)
                SecureField("Password", text: $password)
                    .textContentType(.password)
                Button("Sign in") {
                    let typed = password
                    password = ""
                    Task { await shelf.signIn(email: email, password: typed) }
                }
                .disabled(email.isEmpty || password.isEmpty)
            }
        }
        .onAppear { email = record.email }
    }
}
