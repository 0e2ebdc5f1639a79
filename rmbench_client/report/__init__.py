"""What people look at: terminal tables, summary files, heatmaps, comparisons; and the experiment trackers
(`trackers`: MLflow and W&B, below `api`, which logs to them)."""
