"""AWS emulators objectlog runs beside (or instead of) the embedded moto server, each started
and stopped by objectlog as a process of its own: DynamoDB Local (AWS's own emulator, from the
npm registry) and LocalStack (community edition, in a virtualenv of its own, no Docker)."""
