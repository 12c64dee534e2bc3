"""Live mode (issue #13): placeholder; the job-side client lives here (another helper writes it)."""
