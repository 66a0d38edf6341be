"""The web console's static files (static/): served by objectlog.http.console_routes."""
