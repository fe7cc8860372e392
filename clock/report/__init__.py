"""Reports: text and Markdown tables, JSON, JUnit XML, plots and the HTML report."""
